package blocking

// Codes raised when a fleet document has outlived its expiry: a registry
// (or anyone between it and the host) that keeps serving an old but
// validly signed document freezes the host on it, and the expiry is what
// bounds how long that can go unnoticed.
const (
	FleetEnvelopeExpired    Code = "fleet_envelope_expired"
	FleetRevocationsExpired Code = "fleet_revocations_expired"
	FleetExpiryInvalid      Code = "fleet_expiry_invalid"
)

func init() {
	register(
		Entry{FleetEnvelopeExpired, StageFleet, "the host's envelope has expired",
			"The fleet has not re-signed this host's envelope within its lifetime (expiresAt), so the registry may be serving a frozen copy. Run `oa fleet publish` (it re-signs envelopes past half their lifetime; --expires-in sets the lifetime, 168h by default) and provision again. Nothing was changed on this host."},
		Entry{FleetRevocationsExpired, StageFleet, "the fleet's revocation list has expired",
			"The fleet has not re-signed its revocation list within its lifetime, so newer revocations may be withheld. Run `oa fleet publish` (which refreshes the list) or `oa revoke --publish`, then provision again. What the expired list revokes was still revoked here."},
		Entry{FleetExpiryInvalid, StageFleet, "the --expires-in lifetime is too short or too long",
			"Give --expires-in as a Go duration between 1m and 720h (30 days), such as 168h (the default) or 72h. Hosts must be able to sync well within it, since publishing re-signs documents only once they are past half their lifetime; and it is what bounds how long a registry serving an old copy goes unnoticed, so it cannot be longer than 30 days."},
	)
}
