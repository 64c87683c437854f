package translog

import (
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// SignerOf is the key's signer, for tests that sign checkpoints of trees
// built in memory.
func SignerOf(_ testing.TB, k *Key) note.Signer { return k.signer }
