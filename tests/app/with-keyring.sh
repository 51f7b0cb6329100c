#!/bin/bash
# Runs a test program with a real Secret Service: a private session bus
# (dbus-run-session), gnome-keyring-daemon on it with its login keyring created
# and unlocked with a known password, in a throwaway home; the settings in dconf
# there (its database on disk, which the test reads back). The key the test uses
# is made here (HYOCR_TEST_KEYRING_KEY); afterwards it must appear in nothing the
# test printed (every GLib debug message on) and in no file of that home (the
# keyring's own file holds it encrypted). TAP skip without them.
set -u
if [ -z "${HYOCR_KEYRING_HOME:-}" ]; then
    for p in dbus-run-session gnome-keyring-daemon gdbus; do
        if ! command -v $p >/dev/null; then
            echo "1..0 # SKIP $p is not installed (.ci/setup installs dbus, libglib2.0-bin and gnome-keyring)"
            exit 0
        fi
    done
    # the home first: the bus, and the services it starts (dconf), live in it too
    home=$(mktemp -d)
    export HOME=$home XDG_DATA_HOME=$home/.local/share XDG_CONFIG_HOME=$home/.config XDG_CACHE_HOME=$home/.cache
    export XDG_RUNTIME_DIR=$home/run HYOCR_KEYRING_HOME=$home
    trap 'rm -rf "$home"' EXIT
    mkdir -p "$XDG_RUNTIME_DIR" "$XDG_DATA_HOME" && chmod 700 "$XDG_RUNTIME_DIR"
    dbus-run-session -- "$0" "$@"
    exit $?
fi
home=$HYOCR_KEYRING_HOME
gk=
cleanup() {
    [ -n "$gk" ] && kill "$gk" 2>/dev/null && wait "$gk" 2>/dev/null
}
trap cleanup EXIT
printf 'keyring-test-password' | gnome-keyring-daemon --foreground --unlock --components=secrets \
    >"$home/gnome-keyring.log" 2>&1 &
gk=$!
if ! timeout 120 gdbus wait --session org.freedesktop.secrets; then
    echo "Bail out! gnome-keyring-daemon did not start: $(head -c 400 "$home/gnome-keyring.log")"
    exit 1
fi
# the login keyring is the default collection, unlocked: stores need no prompt
if ! gdbus call --session --dest org.freedesktop.secrets --object-path /org/freedesktop/secrets/collection/login \
        --method org.freedesktop.DBus.Properties.Get org.freedesktop.Secret.Collection Locked | grep -q false; then
    echo "Bail out! gnome-keyring's login keyring is not unlocked"
    exit 1
fi
# dconf where its GSettings backend is installed (else the memory one the tests use)
if [ -e /usr/libexec/dconf-service ] && compgen -G "/usr/lib/*/gio/modules/libdconfsettings.so" >/dev/null; then
    export GSETTINGS_BACKEND=dconf
fi
export HYOCR_TEST_KEYRING_KEY="sk-keyring-$RANDOM$RANDOM-secret" G_MESSAGES_DEBUG=all
"$@" >"$home/output" 2>&1
rc=$?
# the test's TAP (with its logs, which must not hold the key) is this test's output
grep -v "^ok\|^not ok\|^1\.\.\|^#\|^Bail" "$home/output" >&2
grep "^ok\|^not ok\|^1\.\.\|^#\|^Bail" "$home/output"
leaks=$(grep -rlF "$HYOCR_TEST_KEYRING_KEY" "$home" | grep -v "^$home/output$")
if grep -qF "$HYOCR_TEST_KEYRING_KEY" "$home/output"; then
    echo "Bail out! the API key is in the test's output (its logs)"
    exit 1
fi
if [ -n "$leaks" ]; then
    echo "Bail out! the API key is in a file of the home: $leaks"
    exit 1
fi
exit $rc
