#!/bin/sh
# hooktrack's tmux plugin. With TPM: `set -g @plugin '<where hooktrack is>'`; without:
# `run-shell /path/to/hooktrack.tmux` in ~/.tmux.conf. It needs `hooktrack` on the tmux
# server's PATH and flock(1) (util-linux).
#
# It starts one `hooktrack watch --tmux --notify` for this tmux server, kept by a keeper
# that holds a lock named after the server's socket (a second start finds it held and
# does nothing), starts the watch again if it dies, and stops it when the server is gone.
# It puts `hooktrack down` in front of status-right for when no watch runs (the watch
# sets the server option @hooktrack_watch while it does), and binds prefix + W to the
# menu of the agents that wait (`hooktrack jump`). See docs/tmux.md.
set -u

keep() {
    socket=$1
    watch=
    sentinel=
    stop() {
        [ -n "$sentinel" ] && kill "$sentinel" 2>/dev/null
        [ -n "$watch" ] && kill "$watch" 2>/dev/null && wait "$watch"
        exit 0
    }
    trap stop TERM INT HUP
    # The server's end ends the keeper (and so the watch).
    (
        while tmux -S "$socket" has-session 2>/dev/null; do sleep 2; done
        kill -TERM $$
    ) 9>&- &
    sentinel=$!
    while tmux -S "$socket" has-session 2>/dev/null; do
        hooktrack watch --tmux --notify --tmux-socket "$socket" \
            </dev/null >/dev/null 2>&1 9>&- &
        watch=$!
        wait "$watch"
        watch=
        # A watch killed outright could not say it stopped: the status line says so.
        tmux -S "$socket" set-option -s -u @hooktrack_watch 2>/dev/null
        sleep 1
    done
    stop
}

if [ "${1:-}" = keep ]; then
    keep "$2"
fi

socket=$(tmux display-message -p '#{socket_path}') || exit 0
tmux bind-key W run-shell "hooktrack jump --client '#{client_name}'"
right=$(tmux show-options -gv status-right)
case $right in
*@hooktrack_watch*) ;;
*) tmux set-option -g status-right "#{?@hooktrack_watch,,#[fg=white bg=red] hooktrack down #[default] }$right" ;;
esac
if ! command -v hooktrack >/dev/null 2>&1; then
    tmux display-message "hooktrack: no hooktrack on the tmux server's PATH"
    exit 0
fi
if ! command -v flock >/dev/null 2>&1; then
    tmux display-message "hooktrack: the plugin needs flock (util-linux)"
    exit 0
fi
# Taken here and handed to the keeper on fd 9: a second start knows at once.
exec 9>"$socket.hooktrack.lock"
flock -n 9 || exit 0
setsid "$0" keep "$socket" </dev/null >/dev/null 2>&1 &
exit 0
