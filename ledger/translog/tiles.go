package translog

import (
	"context"
	"fmt"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/oa-dev/oa/blocking"
)

// ReadTile returns the c2sp.org/tlog-tiles tile at path ("tile/L/N" or
// "tile/entries/N", with ".p/W" for a partial one) as a tiles server
// serves it: a hash tile's hashes (tlog.ReadTileData over the stored
// hashes), or an entry bundle (torchwood.AppendTileEntry of each entry).
// A tile beyond the log's newest checkpoint is refused, so what is served
// is always covered by a signed checkpoint.
func ReadTile(ctx context.Context, q Querier, path string) ([]byte, error) {
	t, err := torchwood.ParseTilePath(path)
	if err != nil {
		return nil, blocking.New(blocking.LogProofInvalid, "%q is not a tlog-tiles path", cut(path))
	}
	size, err := Size(ctx, q)
	if err != nil {
		return nil, err
	}
	level := max(t.L, 0)
	if end := (t.N*torchwood.TileWidth + int64(t.W)) << (torchwood.TileHeight * level); end > size {
		return nil, blocking.New(blocking.LogEntryUnknown, "tile %s is beyond the log's signed size %d", path, size)
	}
	if t.L >= 0 {
		data, err := tlog.ReadTileData(t, hashReader(ctx, q))
		if err != nil {
			return nil, fmt.Errorf("translog: read tile %s: %w", path, err)
		}
		return data, nil
	}
	var bundle []byte
	for i := range int64(t.W) {
		e, err := EntryAt(ctx, q, t.N*torchwood.TileWidth+i)
		if err != nil {
			return nil, err
		}
		if e == nil {
			return nil, blocking.New(blocking.LogChainDisagree, "the log's leaf %d is missing", t.N*torchwood.TileWidth+i)
		}
		if bundle, err = torchwood.AppendTileEntry(bundle, e); err != nil {
			return nil, err
		}
	}
	return bundle, nil
}
