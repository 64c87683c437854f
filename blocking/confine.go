package blocking

// Codes raised while recording or enforcing a connection's confinement
// profile: the kernel-enforced limits a downstream server runs under.
const (
	ConfinementInvalid     Code = "confinement_invalid"
	ConfinementUnavailable Code = "confinement_unavailable"
	ConfinementForbidden   Code = "confinement_forbidden"
)

func init() {
	register(
		Entry{ConfinementInvalid, StageResolve, "the connection's confinement profile is not usable",
			"Fix the flag named: --read and --write take paths that exist (files or folders) and never $OA_HOME or a folder above it, and a --read folder never lies inside a --write one or the other way round (give such a folder once, with the access it needs); --net is none, any or a comma-separated list of TCP ports 1-65535; the limits are positive numbers within their documented bounds; --unconfined takes none of the others; the built-in sandbox runs inside oa and takes no confinement flags. A path given earlier that no longer exists must be created again, or the connection replaced (`oa connection add-stdio NAME --replace …`)."},
		Entry{ConfinementUnavailable, StageResolve, "the kernel cannot enforce the connection's confinement profile",
			"The detail names the missing piece. Confinement needs Linux with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and landlock in the lsm= boot list): ABI 3 (Linux 6.2) for the filesystem rules, ABI 4 (6.7) for the TCP rules of --net none or a port list, ABI 6 (6.12) for signal and abstract-socket scoping; `oa connection verify` prints the level this host enforces. Run oa on such a kernel, or, accepting that the server runs with oa's full rights, replace the connection with --unconfined (a person must approve the plan again)."},
		Entry{ConfinementForbidden, StageResolve, "the host policy forbids unconfined connections",
			"This host's policy sets confinement.allow_unconfined: false. Replace the connection without --unconfined (give it --read/--write/--net for what it needs), or change the host policy."},
	)
}

// Codes of the layered confinement: a host below its policy's minimum, a
// granted path that is no longer the file the connection was given.
const (
	ConfinementBelowMinimum = Code("confinement_below_minimum")
	ConfinementPathChanged  = Code("confinement_path_changed")
)

func init() {
	register(
		Entry{ConfinementBelowMinimum, StageResolve, "this host cannot hold the connection's server to the policy's confinement minimum",
			"The detail names each guarantee missing and what the kernel lacks. The guarantees are filesystem, network, privileges, signals, abstract-sockets, processes and ipc; the host policy's confinement.minimum lists those every confined server must get (default: filesystem and network). Run oa on a kernel that offers them (docs/confinement.md: what each kernel holds), run it where it may make namespaces (as root, or with CAP_SYS_ADMIN), or lower confinement.minimum in the host policy knowing what is given up (a person must approve the plan again: the level is part of it)."},
		Entry{ConfinementPathChanged, StageResolve, "a --read or --write path of the connection is no longer the file or folder it was given",
			"A granted path, or a folder above it, became a symbolic link, or now names another file or folder; oa starts nothing rather than follow it (a server could otherwise swap its grant for a link into $OA_HOME). See what changed at the path the detail names by its field; put the folder back, or replace the connection with the real path (`oa connection add-stdio NAME --replace … --read|--write REAL_PATH`) and verify it again."},
	)
}
