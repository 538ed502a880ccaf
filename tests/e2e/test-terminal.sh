#!/usr/bin/env bash
# On a terminal: the sandbox's control strings (title, clipboard, window name) do not reach
# it unless --unfiltered-output says so; the sandbox gets a pty of the terminal's size, keys
# reach the command (raw mode: ^C interrupts the command, not aisb), and a resize follows
# SIGWINCH.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || cannot_run "tmux is not installed (scripts/setup installs it)"

"$AISB" build >/dev/null 2>&1
export TMUX_TMPDIR=$E2E_TMP

# ---- the agent's control strings do not reach the user's terminal ----
# The attacker is the command in the sandbox, writing to aisb's terminal. tmux is set to
# honour what it would use: OSC 0/2 set the pane title, ESC k renames the window
# (allow-rename), and with set-clipboard on an OSC 52 write makes a paste buffer and an
# OSC 52 query is answered with the newest buffer, typed into the pane: into the sandbox when
# it has the terminal. A buffer of the "host" holds a secret before the sandbox starts.
# Each case runs in a tmux server of its own, and starts only once the secret is in place.
cat > "$E2E_TMP/tmux.conf" <<'CONF'
set -g set-clipboard on
set -g allow-rename on
set -g automatic-rename off
set -g set-titles on
CONF
# With a terminal: read the clipboard first (the reply is typed into our stdin), then write
# the title, the window name and the clipboard.
cat > "$E2E_TMP/project/attack-tty.sh" <<'SH'
stty -icanon -echo
printf '\033\000\200]52;c;?\007'
IFS= read -r -t 3 -d "$(printf '\007')" reply || true
stty icanon echo
printf 'got-clipboard=[%s]\n' "$(printf %s "${reply##*;}" | base64 -d 2>/dev/null)"
printf '\033]2;pwned-title\007\033kpwned-window\033\\'
printf '\033\000]2;pwned-title-nul\007\033\177kpwned-window-del\033\\'
printf '\033\200]2;pwned-title-80\007\033\377kpwned-window-ff\033\\\033\302\240]2;pwned-title-c2\007'
printf '\033\005]52;c;%s\007' "$(printf pwned-clip | base64)"
echo wrote
SH
# Without one: the title on stdout, the window name and the clipboard on stderr.
cat > "$E2E_TMP/project/attack-pipe.sh" <<'SH'
printf '\033]0;pwned-title\007\033\000]0;pwned-title-nul\007'
printf '\033kpwned-window\033\\\033\177kpwned-window-del\033\\' >&2
printf '\033]52;c;%s\007' "$(printf pwned-clip | base64)" >&2
echo wrote
SH
servers=()
trap 'for s in "${servers[@]}"; do tmux -L "$s" kill-server 2>/dev/null || true; done; cleanup' EXIT
secret=host-secret-$$

# attack NAME COMMAND: run COMMAND (an aisb run) in a pane of server NAME, wait for it.
attack() {
  local name=$1 command=$2
  servers+=("$name")
  tmux -L "$name" -f "$E2E_TMP/tmux.conf" new-session -d -s attack -n start -x 100 -y 30 \
    "tmux wait-for go; cd '$E2E_TMP/project' && AISB_ENTRYPOINT='$AISB_ENTRYPOINT' XDG_CONFIG_HOME='$XDG_CONFIG_HOME' AISB_HOME_VOLUME='$AISB_HOME_VOLUME' $command; echo aisb-exit-\$?; sleep 60"
  tmux -L "$name" set-buffer "$secret"  # an automatic buffer: tmux 3.5 answers OSC 52 reads only from those
  tmux -L "$name" wait-for -S go
  for _ in $(seq 300); do
    tmux -L "$name" capture-pane -p -t attack -S -50 | grep -q aisb-exit- && break
    sleep 0.1
  done
  pane=$(tmux -L "$name" capture-pane -p -t attack -S -50)
  expect_contains "$name: the sandbox ran" "aisb-exit-0" "$pane"
  title=$(tmux -L "$name" display -p -t attack '#{pane_title}')
  window=$(tmux -L "$name" display -p -t attack '#{window_name}')
  buffers=$(tmux -L "$name" list-buffers -F '#{buffer_name}=#{buffer_sample}')
  tmux -L "$name" kill-server
}
held() {
  expect_contains "$1: the text around the strings passed" wrote "$pane"
  expect_absent "$1: the pane title stays" pwned "$title"
  expect_eq "$1: the window name stays" start "$window"
  expect_absent "$1: no clipboard write" pwned-clip "$buffers"
  expect_contains "$1: the host's clipboard is intact" "=$secret" "$buffers"
}
attacked() {
  expect_contains "$1: the sandbox printed" wrote "$pane"
  expect_contains "$1: the title changed (the test sees the attack)" pwned-title "$title"
  expect_contains "$1: the window was renamed" pwned-window "$window"
  expect_contains "$1: the clipboard was written" pwned-clip "$buffers"
}

attack tty "'$AISB' run -- bash /project/attack-tty.sh"
held tty
expect_contains "tty: the clipboard read went unanswered" "got-clipboard=[]" "$pane"
attack tty-unfiltered "'$AISB' run --unfiltered-output -- bash /project/attack-tty.sh"
attacked tty-unfiltered
expect_contains "tty-unfiltered: the sandbox read the host's clipboard" "got-clipboard=[$secret]" "$pane"

# stdin a pipe, stdout and stderr the terminal: no pty, both streams filtered.
attack pipe "echo | '$AISB' run -- bash /project/attack-pipe.sh"
held pipe
attack pipe-unfiltered "echo | '$AISB' run --unfiltered-output -- bash /project/attack-pipe.sh"
attacked pipe-unfiltered

# stdout to a file: never filtered, byte for byte; stderr still the terminal, filtered.
attack file "echo | '$AISB' run -- bash /project/attack-pipe.sh > '$E2E_TMP/out'"
expect_eq "file: a file gets the output byte for byte" \
  "$(printf '\033]0;pwned-title\007\033\000]0;pwned-title-nul\007wrote\n' | od -An -c)" "$(od -An -c < "$E2E_TMP/out")"
expect_eq "file: the window name stays" start "$window"
expect_absent "file: no clipboard write" pwned-clip "$buffers"

# aisb's own messages: a cloned repository names a file in .ai-sandbox with control strings
# and makes it too big, so aisb refuses the run naming it, before any sandbox exists.
mkdir -p "$E2E_TMP/cloned/.ai-sandbox"
head -c 1100000 /dev/zero > "$E2E_TMP/cloned/.ai-sandbox/$(printf 'x\033]2;pwned-by-name\007\033]52;c;cHduZWQ=\007')"
name=message; servers+=("$name")
tmux -L "$name" -f "$E2E_TMP/tmux.conf" new-session -d -s attack -n start -x 100 -y 30 \
  "cd '$E2E_TMP/cloned' && AISB_ENTRYPOINT='$AISB_ENTRYPOINT' XDG_CONFIG_HOME='$XDG_CONFIG_HOME' '$AISB' run -- true; echo aisb-exit-\$?; sleep 60"
for _ in $(seq 100); do tmux -L "$name" capture-pane -p -t attack | grep -q aisb-exit- && break; sleep 0.1; done
pane=$(tmux -L "$name" capture-pane -p -t attack -S -50)
expect_contains "message: aisb refused the run" "aisb-exit-125" "$pane"
expect_contains "message: naming the file, its controls shown as text" '\x1b]2;pwned-by-name\x07' "$pane"
expect_absent "message: the pane title stays" pwned "$(tmux -L "$name" display -p -t attack '#{pane_title}')"
expect_absent "message: no clipboard write" "pwned" "$(tmux -L "$name" list-buffers -F '#{buffer_sample}' 2>/dev/null)"
tmux -L "$name" kill-server

# The project's own path, chosen by whoever named the directory (a repository, the agent):
# printed by aisb log, inspect and --print-policy, never as control strings.
weird="$E2E_TMP/$(printf 'dir\033]2;pwned-by-path\007')"
mkdir -p "$weird"
(cd "$weird" && "$AISB" run -- true >/dev/null 2>&1) || fail "a run in a project with controls in its name"
name=paths; servers+=("$name")
tmux -L "$name" -f "$E2E_TMP/tmux.conf" new-session -d -s attack -n start -x 100 -y 30 \
  "cd '$weird' && export AISB_ENTRYPOINT='$AISB_ENTRYPOINT' XDG_CONFIG_HOME='$XDG_CONFIG_HOME'; '$AISB' log -n 1; '$AISB' inspect | head -3; '$AISB' run --print-policy | head -2; echo aisb-exit-\$?; sleep 60"
for _ in $(seq 100); do tmux -L "$name" capture-pane -p -t attack | grep -q aisb-exit- && break; sleep 0.1; done
expect_contains "paths: the project's path is shown, its controls as text" '\x1b]2;pwned-by-path\x07' \
  "$(tmux -L "$name" capture-pane -p -t attack -S -50)"
expect_absent "paths: the pane title stays" pwned "$(tmux -L "$name" display -p -t attack '#{pane_title}')"
tmux -L "$name" kill-server

# ---- the sandbox's terminal ----
session=aisb-e2e-$$
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
