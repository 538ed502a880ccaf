# The tunnel helper, which squid runs with GATE_TUNNEL_HELPER_AWK about each request inside a
# TLS connection the gate opened. A line is a channel number, where the connection goes
# (HOST:PORT, as its CONNECT named it), the request's method, its URL's scheme, host and port,
# the TLS hello's server name ("-": none) and the ACL's argument ("-"); the answer OK refuses
# the request (another destination, scheme or server name, a CONNECT), ERR lets the rest of the
# rules decide. Where a request is meant to go is compared with where its connection goes, in
# lower case and without a hello's trailing dot; a line short of fields is refused. Each answer
# is one write: squid misreads one that arrives in pieces.
{
  to = tolower($2); host = to; sub(/:[0-9]+$/, "", host)
  sni = tolower($7); sub(/\.$/, "", sni)
  astray = NF < 7 || $3 == "CONNECT" || $4 != "https" || tolower($5) ":" $6 != to ||
           (sni != "-" && sni != host)
  answer = $1 (astray ? " OK" : " ERR")
  print answer
  fflush()
}
