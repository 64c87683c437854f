package connector

import "github.com/oa-dev/oa/connector/proc"

// WithPIDOwnership returns opts with the server's tree owned as a set of
// processes even where a cgroup could hold it.
func WithPIDOwnership(opts Options) Options {
	opts.ownership = proc.OwnershipPIDs
	return opts
}

// SessionCgroup is the cgroup folder of a session's tree, "" when it is
// owned as a set of processes.
func SessionCgroup(s *Session) string {
	p, ok := s.transport.(*procTransport)
	if !ok {
		return ""
	}
	return p.server.Cgroup()
}
