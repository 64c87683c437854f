package translog_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger/translog"
)

// A host appends receipt digests to its log inside a write transaction,
// proves one, and a third party verifies the proof with the log's public
// key alone.
func Example() {
	ctx := context.Background()
	home, _ := os.MkdirTemp("", "translog-example")
	defer os.RemoveAll(home)
	db, err := store.Open(ctx, filepath.Join(home, "state.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	key, err := translog.LoadKey(home, translog.Origin("clinic-1"))
	if err != nil {
		panic(err)
	}
	digests := []string{"sha256:" + fmt.Sprintf("%064x", 1), "sha256:" + fmt.Sprintf("%064x", 2), "sha256:" + fmt.Sprintf("%064x", 3)}
	err = db.Write(ctx, "append", func(tx *sql.Tx) error {
		for _, d := range digests {
			if _, err := translog.Append(ctx, tx, key, []byte(d)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	p, err := translog.Prove(ctx, db, []byte(digests[1]))
	if err != nil {
		panic(err)
	}
	// The auditor has only the proof file and the log's public key.
	logKey, _ := translog.ParseVerifierKey(key.VerifierKey())
	v, err := translog.VerifyProof(p.Marshal(), translog.Policy{Log: logKey}, nil)
	fmt.Println(v.Origin, v.Index, v.Size, err)
	// Output: oa/clinic-1 1 3 <nil>
}
