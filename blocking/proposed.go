package blocking

// Codes of the proposed change an attention item carries: the exact call
// a paused step would send, sealed at rest with the host's secret.
const (
	// ProposedChangeUnreadable: an attention item's sealed proposed
	// change does not open with this host's coordinator secret, or is
	// not the call the item names.
	ProposedChangeUnreadable Code = "proposed_change_unreadable"
)

func init() {
	register(
		Entry{ProposedChangeUnreadable, StageCoordinator, "the paused run's proposed change cannot be read",
			"The change the paused step would make is kept sealed with this host's coordinator secret, bound to its attention item. It does not open here: the item or the secret was changed or copied from another host. Do not approve what you cannot see: reject the item (the run ends with nothing written) and ask the caller for a new request."},
	)
}
