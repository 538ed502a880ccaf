#!/usr/bin/env bash
# On a terminal: the sandbox gets a pty of the terminal's size, keys reach the command
# (raw mode: ^C interrupts the command, not aisb), and a resize follows SIGWINCH.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || cannot_run "tmux is not installed (scripts/setup installs it)"

"$AISB" build >/dev/null 2>&1
session=aisb-e2e-$$
export TMUX_TMPDIR=$E2E_TMP
cat > "$E2E_TMP/project/tty.sh" <<'SH'
trap 'echo "winch $(stty size)"' WINCH
echo "tty $(test -t 0 && echo yes || echo no) size $(stty size)"
echo ready
read -r line
echo "got [$line]"
trap 'echo interrupted; exit 9' INT
echo waiting-for-int
while :; do sleep 0.2; done
SH
screen() { tmux capture-pane -p -t "$session" -S -50; }
wait_for() {
  for _ in $(seq 150); do screen | grep -q "$1" && return 0; sleep 0.1; done
  screen >&2
  fail "the terminal never showed '$1'"
}
tmux new-session -d -s "$session" -x 100 -y 30 \
  "cd '$E2E_TMP/project' && AISB_ENTRYPOINT='$AISB_ENTRYPOINT' XDG_CONFIG_HOME='$XDG_CONFIG_HOME' AISB_HOME_VOLUME='$AISB_HOME_VOLUME' '$AISB' run -- sh /project/tty.sh; echo aisb-exit-\$?; sleep 30"
trap 'tmux kill-server 2>/dev/null; cleanup' EXIT
wait_for ready
expect_contains "the command has a terminal of the outer size" "tty yes size 30 100" "$(screen)"
tmux send-keys -t "$session" "typed text" Enter
wait_for "got \[typed text\]"
pass "keys reach the command"
tmux resize-window -t "$session" -x 120 -y 40 2>/dev/null || tmux refresh-client -t "$session" -C 120,40
wait_for "winch 40 120"
pass "a resize follows SIGWINCH"
wait_for waiting-for-int
tmux send-keys -t "$session" C-c
wait_for "aisb-exit-9"
pass "^C reaches the command (raw mode), whose exit status is aisb's"
