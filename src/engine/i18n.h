/* hyocr — gettext for engine messages that reach users (CLI and app share the
 * "hyocr" domain; the programs bind it, the library only looks strings up). */
#pragma once
#include "hyocr-build-config.h"
#include <glib/gi18n-lib.h>
