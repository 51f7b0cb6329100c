/* hyocr-gtk — getting the model from the model page: the version, where it goes, the
 * server (a mirror), its size against the free disk space, and Tencent's licence, which
 * must be accepted before "Download" works; then progress with Cancel, and failures
 * explained with what to do. "Use a Folder…" takes a model already on disk once it has
 * been checked. Network, disk and checks run on worker threads (GTask); the UI hears
 * of progress at most ten times a second.
 *
 * When a model is ready (downloaded, or a valid folder chosen) the panel emits
 * "model-ready" with its folder; the window stores it and loads it. */
#pragma once
#include "download.h"
#include <adwaita.h>

G_BEGIN_DECLS

typedef enum {
    HYOCR_DOWNLOAD_PANEL_IDLE,         /* nothing known yet */
    HYOCR_DOWNLOAD_PANEL_PLANNING,     /* asking the server for the file list */
    HYOCR_DOWNLOAD_PANEL_READY,        /* size known; waiting for the user */
    HYOCR_DOWNLOAD_PANEL_DOWNLOADING,
    HYOCR_DOWNLOAD_PANEL_CHECKING,     /* checking a chosen folder */
    HYOCR_DOWNLOAD_PANEL_FAILED,       /* see the error; the offer stays usable */
    HYOCR_DOWNLOAD_PANEL_CANCELLED,
    HYOCR_DOWNLOAD_PANEL_DONE,         /* "model-ready" was emitted */
} HyocrDownloadPanelState;

#define HYOCR_TYPE_DOWNLOAD_PANEL (hyocr_download_panel_get_type())
G_DECLARE_FINAL_TYPE(HyocrDownloadPanel, hyocr_download_panel, HYOCR, DOWNLOAD_PANEL, GtkWidget)

/* settings: the app's; "download-endpoint" is read and written there. */
GtkWidget  *hyocr_download_panel_new(GSettings *settings);
/* Back to the offer after a model failed to load; a running download goes on. */
void        hyocr_download_panel_reset(HyocrDownloadPanel *self);

/* What the buttons and the folder choosers do (tests call them directly). */
void        hyocr_download_panel_start(HyocrDownloadPanel *self);     /* refused until the licence is accepted */
void        hyocr_download_panel_cancel(HyocrDownloadPanel *self);
void        hyocr_download_panel_use_folder(HyocrDownloadPanel *self, const char *folder);
/* The model folder is made inside parent (NULL: $XDG_DATA_HOME/hyocr/models). */
void        hyocr_download_panel_set_destination(HyocrDownloadPanel *self, const char *parent);

HyocrDownloadPanelState hyocr_download_panel_get_state(HyocrDownloadPanel *self);
gboolean    hyocr_download_panel_is_busy(HyocrDownloadPanel *self);     /* "busy" property */
double      hyocr_download_panel_get_fraction(HyocrDownloadPanel *self); /* "fraction" property */
const char *hyocr_download_panel_get_status(HyocrDownloadPanel *self);   /* "status": one line for the window */
const char *hyocr_download_panel_get_dest(HyocrDownloadPanel *self);
const char *hyocr_download_panel_get_endpoint(HyocrDownloadPanel *self);

/* For tests. */
GtkWidget  *hyocr_download_panel_get_download_button(HyocrDownloadPanel *self);
GtkWidget  *hyocr_download_panel_get_cancel_button(HyocrDownloadPanel *self);
GtkCheckButton *hyocr_download_panel_get_accept_check(HyocrDownloadPanel *self);
AdwComboRow *hyocr_download_panel_get_version_row(HyocrDownloadPanel *self);
AdwEntryRow *hyocr_download_panel_get_endpoint_row(HyocrDownloadPanel *self);
const char *hyocr_download_panel_get_size_text(HyocrDownloadPanel *self);
const char *hyocr_download_panel_get_free_text(HyocrDownloadPanel *self);
const char *hyocr_download_panel_get_licence_text(HyocrDownloadPanel *self);
const char *hyocr_download_panel_get_progress_text(HyocrDownloadPanel *self);
const char *hyocr_download_panel_get_error_title(HyocrDownloadPanel *self);   /* "" when none shown */
const char *hyocr_download_panel_get_error_body(HyocrDownloadPanel *self);
const char *hyocr_download_panel_get_error_details(HyocrDownloadPanel *self);

/* A failed download in words for people, by kind (the engine's message says what
 * failed, not what to do here): a title and what to do. endpoint, version ("1.5")
 * and dest fill in the details. */
char       *hyocr_download_failure_title(const hyocr_download_failure *f);
char       *hyocr_download_failure_advice(const hyocr_download_failure *f, const char *endpoint,
                                          const char *version, const char *dest);

G_END_DECLS
