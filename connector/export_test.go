package connector

// WithPIDOwnership returns opts with the server's tree owned as a set of
// processes even where a cgroup could hold it.
func WithPIDOwnership(opts Options) Options {
	opts.ownership = OwnershipPIDs
	return opts
}

// CgroupParent is the folder tree cgroups are made in ("" when this host
// has no writable cgroup v2).
func CgroupParent() string { return cgroupParent() }

// SessionCgroup is the cgroup folder of a session's tree, "" when it is
// owned as a set of processes.
func SessionCgroup(s *Session) string {
	p, ok := s.transport.(*procTransport)
	if !ok {
		return ""
	}
	return p.tree.cgroup
}

// StartOf is the start an owned-tree row names process pid by ("" when it is
// not running).
func StartOf(pid int) string {
	p, ok := readProc(pid)
	if !ok {
		return ""
	}
	return p.start
}

// UserNamespaces reports whether this process gives servers namespaces in
// a user namespace of their own (it lacks CAP_SYS_ADMIN).
func UserNamespaces() bool { return !canMakeNamespaces() && userNamespaces() }
