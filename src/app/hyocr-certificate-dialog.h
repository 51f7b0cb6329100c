/* hyocr-gtk — asking the user to trust a server's certificate that the system
 * does not (a self-signed server's): GNOME's way, the certificate shown (whom it
 * is made out to, who signed it, until when, its SHA-256 fingerprint) and a
 * question. Trusted, its fingerprint is kept for that server address in GSettings
 * ("server-certificate": a fingerprint is no secret); it applies to that address
 * only, and changing the address drops it. */
#pragma once
#include <adwaita.h>

G_BEGIN_DECLS

/* The certificate a failed connection refused, when trusting it could help
 * (hyocr_remote_error_get_certificate); NULL otherwise. */
GTlsCertificate  *hyocr_certificate_refused(const GError *error);
/* The question, presented over parent, for the certificate error refused at url;
 * "trust" keeps it in settings. NULL when error carries no certificate. */
AdwMessageDialog *hyocr_certificate_dialog_present(GtkWindow *parent, GSettings *settings, const char *url,
                                                   const GError *error);
/* The fingerprint trusted for url ("server-certificate"), or NULL: none, or it was
 * trusted for another address. */
char             *hyocr_certificate_trusted_for(GSettings *settings, const char *url);
/* The address changed to url: a certificate trusted for another one is dropped. */
void              hyocr_certificate_forget_unless(GSettings *settings, const char *url);

G_END_DECLS
