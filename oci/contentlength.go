package oci

import (
	"strings"

	"github.com/oa-dev/oa/blocking"
)

// orasContentLengthMismatch is the text oras-go's remote blob and
// manifest fetches end their error with when a registry's Content-Length
// is not the descriptor's size. oras-go returns it unwrapped (no errdef
// sentinel to test with errors.Is), so the text is the only mark;
// TestRegistryContentLengthMismatchIsRefused (cmd/oa) pins it against the oras-go in
// go.mod (through the CLI), so an upgrade that rewords it fails a test instead of letting
// the raw transport text through again.
const orasContentLengthMismatch = "mismatch Content-Length"

// contentLengthMismatch reports whether err is oras-go refusing a
// registry response whose Content-Length disagrees with the descriptor:
// the registry sends other bytes than the manifest describes, which is
// tampering as much as a changed byte is.
func contentLengthMismatch(err error) bool {
	return err != nil && strings.Contains(err.Error(), orasContentLengthMismatch)
}

// resolveRefusal is the refusal for err from resolving a reference when it
// says the manifest sent is not the one named (another digest, or a
// Content-Length or body that disagrees with its size); nil otherwise.
func resolveRefusal(err error) error {
	if err == nil || !Tampered(err) {
		return nil
	}
	return blocking.New(blocking.LayerDigestMismatch, "the manifest the source sent for the reference does not match its digest or size")
}
