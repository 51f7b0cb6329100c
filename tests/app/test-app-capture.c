/* Capture Screen Region (hyocr-window-capture.c) against a test double of the XDG
 * Screenshot portal on a private session bus (the test runs under dbus-run-session):
 * this program, started again with --portal-double, owns org.freedesktop.portal.Desktop
 * and answers Screenshot with the real Request/Response protocol, and owns
 * org.freedesktop.Notifications to record what the app notifies. What it answers is
 * read from a file the test writes before each capture: a PNG path, or "cancel". */
#include "app-test.h"
#include "hyocr-build-config.h"
#include "hyocr-history.h"
#include <glib/gstdio.h>
#include <gdk/x11/gdkx.h>

#define DOUBLE_ARG "--portal-double"

static const char double_xml[] =
    "<node>"
    "  <interface name='org.freedesktop.portal.Screenshot'>"
    "    <method name='Screenshot'>"
    "      <arg type='s' name='parent_window' direction='in'/>"
    "      <arg type='a{sv}' name='options' direction='in'/>"
    "      <arg type='o' name='handle' direction='out'/>"
    "    </method>"
    "    <property name='version' type='u' access='read'/>"
    "  </interface>"
    "  <interface name='org.freedesktop.Notifications'>"
    "    <method name='Notify'>"
    "      <arg type='s' direction='in'/><arg type='u' direction='in'/><arg type='s' direction='in'/>"
    "      <arg type='s' direction='in'/><arg type='s' direction='in'/><arg type='as' direction='in'/>"
    "      <arg type='a{sv}' direction='in'/><arg type='i' direction='in'/>"
    "      <arg type='u' direction='out'/>"
    "    </method>"
    "    <method name='GetCapabilities'><arg type='as' direction='out'/></method>"
    "  </interface>"
    "</node>";

/* ---- the double (its own process) ---- */

static char *control_path;

static void answer_screenshot(GDBusConnection *bus, const char *sender, GVariant *params,
                              GDBusMethodInvocation *inv)
{
    g_autoptr(GVariant) options = g_variant_get_child_value(params, 1);
    const char *token = "t";
    g_variant_lookup(options, "handle_token", "&s", &token);
    g_autofree char *who = g_strdup(sender + 1);
    g_strdelimit(who, ".", '_');
    g_autofree char *handle = g_strdup_printf("/org/freedesktop/portal/desktop/request/%s/%s", who, token);
    g_dbus_method_invocation_return_value(inv, g_variant_new("(o)", handle));
    g_autofree char *what = NULL;
    g_file_get_contents(control_path, &what, NULL, NULL);
    g_strstrip(what);
    gboolean cancel = g_str_equal(what, "cancel");
    gboolean fail = g_str_equal(what, "fail");   /* the portal's "other error" */
    GVariantBuilder results;
    g_variant_builder_init(&results, G_VARIANT_TYPE_VARDICT);
    if (!cancel && !fail) {
        g_autofree char *uri = g_filename_to_uri(what, NULL, NULL);
        g_variant_builder_add(&results, "{sv}", "uri", g_variant_new_string(uri));
    }
    g_dbus_connection_emit_signal(bus, sender, handle, "org.freedesktop.portal.Request", "Response",
                                  g_variant_new("(ua{sv})", cancel ? 1u : fail ? 2u : 0u, &results), NULL);
    g_print("screenshot %s %s\n", sender, cancel ? "cancel" : fail ? "fail" : "ok");
}

static void on_call(GDBusConnection *bus, const char *sender, const char *path, const char *iface,
                    const char *method, GVariant *params, GDBusMethodInvocation *inv, gpointer data)
{
    if (g_str_equal(method, "Screenshot")) {
        answer_screenshot(bus, sender, params, inv);
    } else if (g_str_equal(method, "Notify")) {
        const char *summary, *body;
        g_autoptr(GVariant) actions = g_variant_get_child_value(params, 5);
        g_variant_get_child(params, 3, "&s", &summary);
        g_variant_get_child(params, 4, "&s", &body);
        g_autofree char *acts = g_strjoinv(",", (char **)g_variant_get_strv(actions, NULL));
        g_autofree char *flat = g_strescape(body, NULL);
        g_print("notify %s|%s|%s\n", summary, flat, acts);
        g_dbus_method_invocation_return_value(inv, g_variant_new("(u)", 1u));
    } else {
        const char *caps[] = { "body", "actions", NULL };
        g_dbus_method_invocation_return_value(inv, g_variant_new("(^as)", caps));
    }
}

static GVariant *on_get(GDBusConnection *bus, const char *sender, const char *path, const char *iface,
                        const char *prop, GError **error, gpointer data)
{
    return g_variant_new_uint32(2);
}

static int portal_double(const char *control)
{
    control_path = g_strdup(control);
    g_autoptr(GError) error = NULL;
    g_autoptr(GDBusConnection) bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    g_autoptr(GDBusNodeInfo) info = g_dbus_node_info_new_for_xml(double_xml, &error);
    static const GDBusInterfaceVTable vtable = { on_call, on_get, NULL, { 0 } };
    g_dbus_connection_register_object(bus, "/org/freedesktop/portal/desktop", info->interfaces[0], &vtable, NULL,
                                      NULL, &error);
    g_dbus_connection_register_object(bus, "/org/freedesktop/Notifications", info->interfaces[1], &vtable, NULL, NULL,
                                      &error);
    static const char *const names[] = { "org.freedesktop.portal.Desktop", "org.freedesktop.Notifications" };
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autoptr(GVariant) r = g_dbus_connection_call_sync(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                            "org.freedesktop.DBus", "RequestName",
                                                            g_variant_new("(su)", names[i], 4u), G_VARIANT_TYPE("(u)"),
                                                            G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
        if (!r) {
            g_print("failed %s\n", error->message);
            return 1;
        }
    }
    g_print("ready\n");
    for (;;) g_main_context_iteration(NULL, TRUE);
}

/* ---- the test ---- */

static GSubprocess *double_proc;
static GDataInputStream *double_out;
static char *control;

static char *double_line(void)
{
    g_autoptr(GError) error = NULL;
    char *line = g_data_input_stream_read_line_utf8(double_out, NULL, NULL, &error);
    g_assert_no_error(error);
    return line;
}

static void start_double(void)
{
    if (!g_getenv("DBUS_SESSION_BUS_ADDRESS")) return;
    g_autofree char *dir = g_dir_make_tmp("hyocr-capture-XXXXXX", NULL);
    control = g_build_filename(dir, "answer", NULL);
    g_autoptr(GError) error = NULL;
    double_proc = g_subprocess_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error, "/proc/self/exe", DOUBLE_ARG, control, NULL);
    g_assert_no_error(error);
    double_out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(double_proc));
    g_autofree char *line = double_line();
    g_assert_cmpstr(line, ==, "ready");
}

static gboolean captures_are(gpointer data)
{
    gpointer *d = data;
    return hyocr_window_get_n_captures(d[0]) == GPOINTER_TO_UINT(d[1]);
}

static void on_text_read(GObject *source, GAsyncResult *res, gpointer data)
{
    *(char **)data = gdk_clipboard_read_text_finish(GDK_CLIPBOARD(source), res, NULL);
}

static gboolean is_set(gpointer data)
{
    return *(char **)data != NULL;
}

static void test_capture(void)
{
    if (!double_proc) {
        g_test_skip("no session bus: run under dbus-run-session");
        return;
    }
    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_autofree char *png = app_test_data("images", "tiny_40x30.png", NULL);
    g_assert_true(g_file_set_contents(control, png, -1, NULL));
    g_settings_set_int(app_test_settings(), "max-new-tokens", 12);
    app_test_drain();
    /* the header's button */
    g_assert_true(gtk_widget_activate(win->capture_button));
    gpointer d[2] = { win, GUINT_TO_POINTER(1) };
    g_assert_true(app_test_wait(captures_are, d, APP_TEST_WAIT_MS));
    g_autofree char *call = double_line();
    g_assert_true(g_str_has_prefix(call, "screenshot :"));
    g_assert_true(g_str_has_suffix(call, " ok"));
    /* the capture ran as a job of the image the portal gave */
    g_assert_cmpuint(g_list_model_get_n_items(hyocr_window_get_jobs(win)), ==, 1);
    HyocrJob *job = app_test_job_at(win, 0);
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_DONE);
    g_assert_cmpstr(hyocr_job_get_title(job), ==, "Screen Capture");
    g_autofree char *streamed = NULL, *final_text = NULL;
    app_test_cli_run("ckpt-flat", "tiny_40x30.png", "recognize", 12, &streamed, &final_text);
    g_assert_cmpstr(hyocr_job_get_text(job), ==, final_text);
    /* its text on the clipboard */
    char *copied = NULL;
    gdk_clipboard_read_text_async(gtk_widget_get_clipboard(GTK_WIDGET(win)), NULL, on_text_read, &copied);
    g_assert_true(app_test_wait(is_set, &copied, APP_TEST_WAIT_MS));
    g_assert_cmpstr(copied, ==, final_text);
    g_free(copied);
    /* and a notification saying so, with Open */
    g_autofree char *note = double_line();
    g_test_message("%s", note);
    g_assert_true(g_str_has_prefix(note, "notify Text Copied|Screen Capture: "));
    g_assert_nonnull(strstr(note, "Open"));
    /* its actions name the history entry, which outlives the process */
    gint64 entry = hyocr_job_get_history_id(job);
    g_assert_cmpint(entry, >, 0);
    g_autofree char *open = g_strdup_printf("app.open-history-entry(int64 %" G_GINT64_FORMAT ")", entry);
    g_assert_nonnull(strstr(note, open));
    /* Open while the job is in the list: that job, selected, not a copy */
    gtk_list_box_unselect_all(win->job_list);
    g_assert_null(hyocr_window_get_selected_job(win));
    g_action_group_activate_action(G_ACTION_GROUP(app_test_app()), "open-history-entry", g_variant_new_int64(entry));
    g_assert_cmpuint(g_list_model_get_n_items(hyocr_window_get_jobs(win)), ==, 1);
    g_assert_true(hyocr_window_get_selected_job(win) == job);

    /* cancelled: nothing happens, quietly */
    g_assert_true(g_file_set_contents(control, "cancel", -1, NULL));
    guint toasts = hyocr_window_get_n_toasts(win);
    guint notes = hyocr_application_get_n_notifications(app_test_app());
    gtk_widget_activate_action(GTK_WIDGET(win), "win.capture", NULL);
    d[1] = GUINT_TO_POINTER(2);
    g_assert_true(app_test_wait(captures_are, d, APP_TEST_WAIT_MS));
    g_autofree char *call2 = double_line();
    g_assert_true(g_str_has_suffix(call2, " cancel"));
    g_assert_cmpuint(g_list_model_get_n_items(hyocr_window_get_jobs(win)), ==, 1);
    g_assert_cmpuint(hyocr_window_get_n_toasts(win), ==, toasts);
    g_assert_cmpuint(hyocr_application_get_n_notifications(app_test_app()), ==, notes);
    app_test_destroy_window(win);

    /* Open in a window that never ran it (the process that did has ended): the entry,
     * from the history, selected with its text */
    win = app_test_window("ckpt-flat", FALSE);
    g_assert_cmpuint(g_list_model_get_n_items(hyocr_window_get_jobs(win)), ==, 0);
    g_action_group_activate_action(G_ACTION_GROUP(app_test_app()), "open-history-entry", g_variant_new_int64(entry));
    g_assert_cmpuint(g_list_model_get_n_items(hyocr_window_get_jobs(win)), ==, 1);
    HyocrJob *opened = hyocr_window_get_selected_job(win);
    g_assert_nonnull(opened);
    g_assert_cmpint(hyocr_job_get_history_id(opened), ==, entry);
    g_assert_cmpint(hyocr_job_get_state(opened), ==, HYOCR_JOB_DONE);
    g_assert_cmpstr(hyocr_job_get_title(opened), ==, "Screen Capture");
    g_assert_cmpstr(hyocr_job_get_text(opened), ==, final_text);
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "jobs");
    app_test_destroy_window(win);
}

/* `hyocr-gtk --capture` while hyocr-gtk runs: the running instance takes the screenshot
 * (the portal is called by its connection), the second process just forwards and ends. */
static char *name_owner(const char *name)
{
    g_autoptr(GDBusConnection) bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, NULL);
    g_autoptr(GVariant) r = g_dbus_connection_call_sync(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                        "org.freedesktop.DBus", "GetNameOwner",
                                                        g_variant_new("(s)", name), G_VARIANT_TYPE("(s)"),
                                                        G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL);
    char *owner = NULL;
    if (r) g_variant_get(r, "(s)", &owner);
    return owner;
}

static gboolean has_owner(gpointer name)
{
    g_autofree char *owner = name_owner(name);
    return owner != NULL;
}

static void test_forwarded(void)
{
    const char *gtk_app = g_getenv("HYOCR_GTK");
    if (!double_proc || !gtk_app) {
        g_test_skip("no session bus or no HYOCR_GTK");
        return;
    }
    g_autofree char *png = app_test_data("images", "tiny_40x30.png", NULL);
    g_assert_true(g_file_set_contents(control, png, -1, NULL));
    g_autofree char *model = app_test_data("ckpt-flat", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocess) primary = g_subprocess_new(G_SUBPROCESS_FLAGS_NONE, &error, gtk_app, "--model", model, NULL);
    g_assert_no_error(error);
    g_assert_true(app_test_wait(has_owner, (gpointer)HYOCR_APP_ID, APP_TEST_WAIT_MS));
    g_autofree char *owner = name_owner(HYOCR_APP_ID);
    g_autoptr(GSubprocess) second = g_subprocess_new(G_SUBPROCESS_FLAGS_NONE, &error, gtk_app, "--capture", NULL);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_wait(second, NULL, &error));
    g_assert_true(g_subprocess_get_successful(second));
    g_autofree char *call = double_line();
    g_autofree char *want = g_strdup_printf("screenshot %s ok", owner);
    g_assert_cmpstr(call, ==, want);
    /* (what the instance does with the picture is the first test's; its default 8192
     * tokens on the tiny checkpoint would only make this one long) */
    g_subprocess_force_exit(primary);
    g_subprocess_wait(primary, NULL, NULL);
}

/* ---- hyocr-gtk --capture with no instance running: nothing is shown ---- */

/* Every window mapped on the display by another client: the test selects
 * SubstructureNotify on the root window, so the X server reports each top-level
 * (and override-redirect popup) that any process maps. */
typedef struct {
    guint       n_foreign_maps;
    GdkDisplay *display;
    gulong      handler;
    long        root_mask;   /* the root window's event mask before the watch */
} MapWatch;

static gboolean on_xevent(GdkX11Display *display, const XEvent *ev, gpointer data)
{
    MapWatch *watch = data;
    if (ev->type == MapNotify && !gdk_x11_surface_lookup_for_display(GDK_DISPLAY(display), ev->xmap.window))
        watch->n_foreign_maps++;
    return FALSE;
}

/* What the X server sent before now has been read and dispatched. */
static void x_sync(GdkDisplay *display)
{
    XSync(gdk_x11_display_get_xdisplay(display), False);
    app_test_drain();
}

static void map_watch_start(MapWatch *watch, GdkDisplay *display)
{
    Display *xdpy = gdk_x11_display_get_xdisplay(display);
    XWindowAttributes attrs;
    XGetWindowAttributes(xdpy, DefaultRootWindow(xdpy), &attrs);
    watch->display = display;
    watch->root_mask = attrs.your_event_mask;
    XSelectInput(xdpy, DefaultRootWindow(xdpy), attrs.your_event_mask | SubstructureNotifyMask);
    watch->handler = g_signal_connect(display, "xevent", G_CALLBACK(on_xevent), watch);
    x_sync(display);
}

static void map_watch_stop(MapWatch *watch)
{
    Display *xdpy = gdk_x11_display_get_xdisplay(watch->display);
    g_signal_handler_disconnect(watch->display, watch->handler);
    XSelectInput(xdpy, DefaultRootWindow(xdpy), watch->root_mask);
}

static gboolean foreign_mapped(gpointer data)
{
    return ((MapWatch *)data)->n_foreign_maps > 0;
}

static gboolean has_no_owner(gpointer name)
{
    g_autofree char *owner = name_owner(name);
    return owner == NULL;
}

/* The clipboard of the display: what another client (the app) holds. */
static char *read_clipboard(GdkDisplay *display)
{
    char *copied = NULL;
    gdk_clipboard_read_text_async(gdk_display_get_clipboard(display), NULL, on_text_read, &copied);
    g_assert_true(app_test_wait(is_set, &copied, APP_TEST_WAIT_MS));
    return copied;
}

static void on_exited(GObject *source, GAsyncResult *res, gpointer data)
{
    g_autoptr(GError) error = NULL;
    g_assert_true(g_subprocess_wait_finish(G_SUBPROCESS(source), res, &error));
    *(gboolean *)data = TRUE;
}

static gboolean is_true(gpointer data)
{
    return *(gboolean *)data;
}

/* What D-Bus-activated services get in their environment, as a session sets it. */
static void set_activation_env(GDBusConnection *bus, const char *const *pairs)
{
    GVariantBuilder env;
    g_variant_builder_init(&env, G_VARIANT_TYPE("a{ss}"));
    for (; *pairs; pairs += 2) g_variant_builder_add(&env, "{ss}", pairs[0], pairs[1]);
    g_autoptr(GError) error = NULL;
    g_autoptr(GVariant) r = g_dbus_connection_call_sync(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                        "org.freedesktop.DBus", "UpdateActivationEnvironment",
                                                        g_variant_new("(a{ss})", &env), NULL, G_DBUS_CALL_FLAGS_NONE,
                                                        -1, NULL, &error);
    g_assert_no_error(error);
}

/* An action of the app as the shell calls it for a notification: on the bus, by the app's
 * id, which starts the app when it does not run (DBusActivatable). */
static void activate_app_action(GDBusConnection *bus, const char *name, GVariant *target)
{
    GVariantBuilder params;
    g_variant_builder_init(&params, G_VARIANT_TYPE("av"));
    if (target) g_variant_builder_add(&params, "v", target);
    g_autoptr(GError) error = NULL;
    g_autoptr(GVariant) r = g_dbus_connection_call_sync(bus, HYOCR_APP_ID, "/io/github/hyocr/Hyocr",
                                                        "org.freedesktop.Application", "ActivateAction",
                                                        g_variant_new("(sava{sv})", name, &params, NULL), NULL,
                                                        G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
    g_assert_no_error(error);
}

/* What a test of hyocr-gtk itself needs (skipped, saying why, without it), and no instance
 * of the app left running by the test before. */
static gboolean command_line_possible(const char *gtk_app, GdkDisplay *display)
{
    if (!double_proc || !gtk_app) {
        g_test_skip("no session bus or no HYOCR_GTK");
        return FALSE;
    }
    if (!GDK_IS_X11_DISPLAY(display)) {
        g_test_skip("the map watch needs X11 (GDK_BACKEND=x11)");
        return FALSE;
    }
    g_assert_true(app_test_wait(has_no_owner, (gpointer)HYOCR_APP_ID, APP_TEST_WAIT_MS));
    return TRUE;
}

/* `hyocr-gtk --capture` as a global shortcut runs it, with no instance running: the portal is
 * asked, the region read with the preset, the text put on the clipboard, the history holds the
 * job, the notification says so with Open, and no window is ever mapped. Then the process ends
 * by itself: Xvfb has no clipboard manager (the store fails), so it holds just the clipboard
 * until another client copies, and exits with status 0 then. The notification's Open, called
 * on the bus as the shell does, then starts the app again (D-Bus activation of this build's
 * service file), which shows a window: test_capture checks that it opens on the entry. */
static void test_command_line(void)
{
    const char *gtk_app = g_getenv("HYOCR_GTK");
    GdkDisplay *display = gdk_display_get_default();
    if (!command_line_possible(gtk_app, display)) return;
    g_autofree char *png = app_test_data("images", "tiny_40x30.png", NULL);
    g_assert_true(g_file_set_contents(control, png, -1, NULL));
    /* the process's own settings (12 tokens: the tiny checkpoint's 8192 would only make
     * the test long) and its own history, in files */
    g_autofree char *home = g_dir_make_tmp("hyocr-capture-cli-XXXXXX", NULL);
    g_autofree char *config = g_build_filename(home, "config", NULL);
    g_autofree char *data = g_build_filename(home, "data", NULL);
    g_autofree char *keyfile_dir = g_build_filename(config, "glib-2.0", "settings", NULL);
    g_autofree char *keyfile = g_build_filename(keyfile_dir, "keyfile", NULL);
    g_autofree char *model = app_test_data("ckpt-flat", NULL);
    g_autofree char *settings = g_strdup_printf("[io/github/hyocr/Hyocr]\nmax-new-tokens=12\nmodel-folder='%s'\n",
                                                model);
    g_assert_cmpint(g_mkdir_with_parents(keyfile_dir, 0700), ==, 0);
    g_assert_true(g_file_set_contents(keyfile, settings, -1, NULL));

    MapWatch watch = { 0 };
    map_watch_start(&watch, display);

    g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
    const char *const env[] = { "GSETTINGS_BACKEND", "keyfile", "XDG_CONFIG_HOME", config, "XDG_DATA_HOME", data,
                                NULL };
    for (const char *const *e = env; *e; e += 2) g_subprocess_launcher_setenv(launcher, e[0], e[1], TRUE);
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocess) app = g_subprocess_launcher_spawn(launcher, &error, gtk_app, "--model", model, "--capture",
                                                              NULL);
    g_assert_no_error(error);

    /* the portal is called by the new instance, and the answer is announced */
    g_autofree char *call = double_line();
    g_autofree char *owner = name_owner(HYOCR_APP_ID);
    g_autofree char *want = g_strdup_printf("screenshot %s ok", owner);
    g_assert_cmpstr(call, ==, want);
    g_autofree char *note = double_line();
    g_test_message("%s", note);
    g_assert_true(g_str_has_prefix(note, "notify Text Copied|Screen Capture: "));
    const char *open = strstr(note, "app.open-history-entry(int64 ");
    g_assert_nonnull(open);
    gint64 entry = g_ascii_strtoll(open + strlen("app.open-history-entry(int64 "), NULL, 10);

    /* the text is on the clipboard: hyocr run's answer for the same picture */
    g_autofree char *streamed = NULL, *final_text = NULL;
    app_test_cli_run("ckpt-flat", "tiny_40x30.png", "recognize", 12, &streamed, &final_text);
    g_autofree char *copied = read_clipboard(display);
    g_assert_cmpstr(copied, ==, final_text);
    x_sync(display);
    g_assert_cmpuint(watch.n_foreign_maps, ==, 0);

    /* something else copied: the process has nothing left to hold, and ends by itself */
    gboolean exited = FALSE;
    g_subprocess_wait_async(app, NULL, on_exited, &exited);
    gdk_clipboard_set_text(gdk_display_get_clipboard(display), "copied after the capture");
    x_sync(display);
    g_assert_true(app_test_wait(is_true, &exited, APP_TEST_WAIT_MS));
    if (!exited) {   /* (assertions do not abort here) */
        g_subprocess_force_exit(app);
        return;
    }
    g_assert_true(g_subprocess_get_if_exited(app));
    g_assert_cmpint(g_subprocess_get_exit_status(app), ==, 0);
    g_assert_true(app_test_wait(has_no_owner, (gpointer)HYOCR_APP_ID, APP_TEST_WAIT_MS));
    x_sync(display);
    g_assert_cmpuint(watch.n_foreign_maps, ==, 0);

    /* the history has the job, with the picture the portal gave */
    g_autofree char *db = g_build_filename(data, "hyocr", "history.db", NULL);
    g_autoptr(hyocr_history) h = hyocr_history_open(db, NULL, &error);
    g_assert_no_error(error);
    g_autoptr(GPtrArray) entries = hyocr_history_query(h, NULL, 0, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(entries->len, ==, 1);
    const hyocr_history_entry *e = entries->pdata[0];
    g_assert_cmpint(e->id, ==, entry);
    g_assert_cmpstr(e->title, ==, "Screen Capture");
    g_assert_cmpint(e->state, ==, HYOCR_HISTORY_DONE);
    g_assert_cmpstr(e->text, ==, final_text);
    g_autoptr(hyocr_history_entry) full = hyocr_history_get(h, e->id, &error);
    g_assert_no_error(error);
    g_assert_nonnull(full->image);
    g_clear_pointer(&h, hyocr_history_free);

    /* Open, as the notification's button calls it, after the process ended: the bus starts
     * the app again (with the session's environment: these settings and this history), and
     * it shows a window */
    g_autoptr(GDBusConnection) bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, NULL);
    set_activation_env(bus, env);
    activate_app_action(bus, "open-history-entry", g_variant_new_int64(entry));
    g_autofree char *second = name_owner(HYOCR_APP_ID);
    g_assert_nonnull(second);
    g_assert_cmpstr(second, !=, owner);
    g_assert_true(app_test_wait(foreign_mapped, &watch, APP_TEST_WAIT_MS));
    map_watch_stop(&watch);
    activate_app_action(bus, "quit", NULL);
    g_assert_true(app_test_wait(has_no_owner, (gpointer)HYOCR_APP_ID, APP_TEST_WAIT_MS));
}

static void on_double_line(GObject *source, GAsyncResult *res, gpointer data)
{
    char *line = g_data_input_stream_read_line_finish_utf8(G_DATA_INPUT_STREAM(source), res, NULL, NULL);
    *(char **)data = line ? line : g_strdup("");
}

/* `hyocr-gtk --capture` whose screenshot fails (the portal answers an error): with no window
 * shown a toast would be seen by nobody, so the failure is a notification; then the process
 * ends by itself, status 0, having mapped no window. */
static void test_command_line_failed(void)
{
    const char *gtk_app = g_getenv("HYOCR_GTK");
    GdkDisplay *display = gdk_display_get_default();
    if (!command_line_possible(gtk_app, display)) return;
    g_assert_true(g_file_set_contents(control, "fail", -1, NULL));
    g_autofree char *home = g_dir_make_tmp("hyocr-capture-fail-XXXXXX", NULL);
    g_autofree char *config = g_build_filename(home, "config", NULL);
    g_autofree char *data = g_build_filename(home, "data", NULL);
    g_autofree char *model = app_test_data("ckpt-flat", NULL);

    MapWatch watch = { 0 };
    map_watch_start(&watch, display);

    g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
    const char *const env[] = { "GSETTINGS_BACKEND", "memory", "XDG_CONFIG_HOME", config, "XDG_DATA_HOME", data,
                                NULL };
    for (const char *const *e = env; *e; e += 2) g_subprocess_launcher_setenv(launcher, e[0], e[1], TRUE);
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocess) app = g_subprocess_launcher_spawn(launcher, &error, gtk_app, "--model", model, "--capture",
                                                              NULL);
    g_assert_no_error(error);
    gboolean exited = FALSE;
    g_subprocess_wait_async(app, NULL, on_exited, &exited);

    g_autofree char *call = double_line();
    g_assert_true(g_str_has_prefix(call, "screenshot ") && g_str_has_suffix(call, " fail"));
    /* read with a bound: without the notification the line would never come */
    g_autofree char *note = NULL;
    g_data_input_stream_read_line_async(double_out, G_PRIORITY_DEFAULT, NULL, on_double_line, &note);
    g_assert_true(app_test_wait(is_set, &note, APP_TEST_WAIT_MS));
    if (!note) return;   /* (assertions do not abort here; the double's stream stays busy) */
    g_test_message("%s", note);
    g_assert_true(g_str_has_prefix(note, "notify The Screen Was Not Captured|The screen could not be captured: "));

    g_assert_true(app_test_wait(is_true, &exited, APP_TEST_WAIT_MS));
    if (!exited) {   /* (assertions do not abort here) */
        g_subprocess_force_exit(app);
        return;
    }
    g_assert_true(g_subprocess_get_if_exited(app));
    g_assert_cmpint(g_subprocess_get_exit_status(app), ==, 0);
    x_sync(display);
    g_assert_cmpuint(watch.n_foreign_maps, ==, 0);
    map_watch_stop(&watch);
}

int main(int argc, char **argv)
{
    if (argc > 2 && g_str_equal(argv[1], DOUBLE_ARG)) return portal_double(argv[2]);
    app_test_init(&argc, &argv);
    start_double();
    g_test_add_func("/app/capture/clipboard-and-cancel", test_capture);
    g_test_add_func("/app/capture/command-line", test_command_line);
    g_test_add_func("/app/capture/command-line-failed", test_command_line_failed);
    g_test_add_func("/app/capture/forwarded", test_forwarded);
    int rc = g_test_run();
    if (double_proc) g_subprocess_force_exit(double_proc);
    return rc;
}
