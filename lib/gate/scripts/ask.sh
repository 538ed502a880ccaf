# The ask helper (/bin/sh ask.sh), a relay: squid's lines to the run's questions FIFO, the
# run's answers to squid. The run's ask/ directory is at /aisb-gate/ask (GATE_ASK_INSIDE),
# whose FIFOs questions (written here) and answers (read here) the run holds open. It ends when
# the run closes its end of answers (the run is gone); the lines squid sent meanwhile are
# refused with the helper.
exec 3>/aisb-gate/ask/questions 4</aisb-gate/ask/answers 5<&0 || exit 1
# A helper squid starts again numbers its channels from 0 again: its lines carry a generation
# of its own, and it passes on only the answers that carry it (an answer to the one before
# stays out).
g=$$.$(date +%s%N)
# An asynchronous command's stdin is /dev/null unless redirected: squid's is 5. mawk (the
# image's) reads a pipe a line at a time only when interactive.
mawk -W interactive -v g="$g" '{ print g, $0 }' <&5 >&3 & questions=$!
mawk -W interactive -v g="$g " 'index($0, g) == 1 { print substr($0, length(g) + 1) }' <&4
kill $questions 2>/dev/null
