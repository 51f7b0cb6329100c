#include "error.h"

G_DEFINE_QUARK(hyocr-error-quark, hyocr_error)
