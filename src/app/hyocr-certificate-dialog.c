/* hyocr-gtk — trusting a server's certificate (hyocr-certificate-dialog.h). */
#include "hyocr-certificate-dialog.h"
#include "hyocr-build-config.h"
#if HYOCR_HAVE_DOWNLOAD
#include "remote.h"
#endif
#include <glib/gi18n.h>

GTlsCertificate *hyocr_certificate_refused(const GError *error)
{
#if HYOCR_HAVE_DOWNLOAD
    return hyocr_remote_error_get_certificate(error, NULL);
#else
    (void)error;
    return NULL;
#endif
}

char *hyocr_certificate_trusted_for(GSettings *settings, const char *url)
{
    const char *for_url = NULL, *fingerprint = NULL;
    g_autoptr(GVariant) v = g_settings_get_value(settings, "server-certificate");
    g_variant_get(v, "(&s&s)", &for_url, &fingerprint);
    return url && *url && *fingerprint && g_str_equal(for_url, url) ? g_strdup(fingerprint) : NULL;
}

void hyocr_certificate_forget_unless(GSettings *settings, const char *url)
{
    const char *for_url = NULL, *fingerprint = NULL;
    g_autoptr(GVariant) v = g_settings_get_value(settings, "server-certificate");
    g_variant_get(v, "(&s&s)", &for_url, &fingerprint);
    if (*for_url && !g_str_equal(for_url, url)) g_settings_reset(settings, "server-certificate");
}

#if HYOCR_HAVE_DOWNLOAD
typedef struct {
    GSettings *settings;
    char      *url, *fingerprint;
} Question;

static void question_free(gpointer data, GClosure *closure)
{
    (void)closure;
    Question *q = data;
    g_object_unref(q->settings);
    g_free(q->url);
    g_free(q->fingerprint);
    g_free(q);
}

static void answered(AdwMessageDialog *dialog, const char *response, Question *q)
{
    if (g_str_equal(response, "trust"))
        g_settings_set(q->settings, "server-certificate", "(ss)", q->url, q->fingerprint);
}

static char *date_words(GDateTime *when)
{
    return when ? g_date_time_format(when, "%x") : g_strdup(_("unknown"));
}

/* What the certificate says of itself, and what the system found wrong with it. */
static char *certificate_words(GTlsCertificate *cert, GTlsCertificateFlags problems, const char *url,
                               const char *fingerprint, const char *before)
{
    g_autofree char *subject = NULL, *issuer = NULL;
    g_autoptr(GDateTime) after = NULL;
    g_object_get(cert, "subject-name", &subject, "issuer-name", &issuer, "not-valid-after", &after, NULL);
    g_autofree char *until = date_words(after);
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, _("%s presented a certificate this computer does not trust"), url);
    if (problems & G_TLS_CERTIFICATE_UNKNOWN_CA)
        g_string_append_printf(s, " (%s)", _("no authority this computer trusts signed it: it may be self-signed"));
    else if (problems & G_TLS_CERTIFICATE_BAD_IDENTITY)
        g_string_append_printf(s, " (%s)", _("it is made out to another host name"));
    g_string_append(s, ". ");
    if (before && g_ascii_strcasecmp(before, fingerprint))
        g_string_append_printf(s, _("It is not the certificate trusted for this server before (%s): it may have been "
                                    "renewed, or another server answers at this address. "), before);
    g_string_append(s, _("Trust it only if this is your own server and the fingerprint below is its certificate's "
                         "(openssl x509 -noout -fingerprint -sha256 -in CERTIFICATE.pem shows it there). Every "
                         "page and the API key go to whoever holds this certificate."));
    g_string_append(s, "\n\n");
    g_string_append_printf(s, _("Issued to: %s"), subject ? subject : _("unknown"));
    g_string_append_c(s, '\n');
    g_string_append_printf(s, _("Issued by: %s"), issuer ? issuer : _("unknown"));
    g_string_append_c(s, '\n');
    g_string_append_printf(s, _("Valid until: %s"), until);
    g_string_append(s, "\n\n");
    g_string_append_printf(s, _("SHA-256 fingerprint: %s"), fingerprint);
    return g_string_free(s, FALSE);
}
#endif

AdwMessageDialog *hyocr_certificate_dialog_present(GtkWindow *parent, GSettings *settings, const char *url,
                                                   const GError *error)
{
#if HYOCR_HAVE_DOWNLOAD
    GTlsCertificateFlags problems = 0;
    GTlsCertificate *cert = hyocr_remote_error_get_certificate(error, &problems);
    if (!cert) return NULL;
    Question *q = g_new0(Question, 1);
    q->settings = g_object_ref(settings);
    q->url = g_strdup(url);
    q->fingerprint = hyocr_remote_certificate_fingerprint(cert);
    g_autofree char *before = hyocr_certificate_trusted_for(settings, url);
    g_autofree char *body = certificate_words(cert, problems, url, q->fingerprint, before);
    AdwMessageDialog *dialog = ADW_MESSAGE_DIALOG(adw_message_dialog_new(parent, _("Trust This Server’s Certificate?"),
                                                                         body));
    adw_message_dialog_add_responses(dialog, "cancel", _("_Cancel"), "trust", _("_Trust Certificate"), NULL);
    adw_message_dialog_set_response_appearance(dialog, "trust", ADW_RESPONSE_DESTRUCTIVE);
    adw_message_dialog_set_default_response(dialog, "cancel");
    adw_message_dialog_set_close_response(dialog, "cancel");
    g_signal_connect_data(dialog, "response", G_CALLBACK(answered), q, question_free, 0);
    gtk_window_present(GTK_WINDOW(dialog));
    return dialog;
#else
    (void)parent, (void)settings, (void)url, (void)error;
    return NULL;
#endif
}
