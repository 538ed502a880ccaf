# squid's helper for a run's own gate (/bin/sh held.sh): asked about every request (no answer
# is cached), it answers OK, which refuses the request, unless the marker the gate's first
# process (start.sh) keeps while the run holds its lease is there (so a marker it cannot see
# refuses). A line is a channel number and the client's address; the answer names the channel.
while read -r channel _; do
  if [ -e /aisb-gate/tls/serving ]; then echo "$channel ERR"; else echo "$channel OK"; fi
done
