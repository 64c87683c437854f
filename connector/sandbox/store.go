package sandbox

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/internal/filekey"
)

// stateFile and lockFile live in the state folder.
const (
	stateFile = "records.json"
	lockFile  = "records.lock"
)

// state is the whole sandbox: records that differ from the seed, by
// reference. A reference not in Records falls back to the seed rules.
type state struct {
	Records map[string]*Record `json:"records"`
}

// seed returns the starting state.
func seed() *state {
	return &state{Records: map[string]*Record{
		"AB-1234": {Record: "AB-1234", Status: StatusOpen, Notes: []Note{}},
		"CD-5678": {Record: "CD-5678", Status: StatusOpen, Notes: []Note{{ID: "CD-5678-N1", Text: "Customer asked for a callback."}}},
		"CL-0001": {Record: "CL-0001", Status: StatusClosed, Notes: []Note{}},
	}}
}

// scripted are the prefixes whose every reference exists and is open.
var scripted = []string{"DU", "FS", "TO", "OF"}

// read returns the record ref, if it exists.
func (s *state) read(ref string) (Record, bool) {
	if r, ok := s.Records[ref]; ok {
		out := *r
		out.Notes = slices.Clone(r.Notes)
		if out.Notes == nil {
			out.Notes = []Note{}
		}
		return out, true
	}
	if slices.Contains(scripted, prefix(ref)) {
		return Record{Record: ref, Status: StatusOpen, Notes: []Note{}}, true
	}
	return Record{}, false
}

// add appends a note to ref, which exists.
func (s *state) add(ref string, n Note) {
	r, _ := s.read(ref)
	r.Notes = append(r.Notes, n)
	s.Records[ref] = &r
}

// store keeps the state in memory (dir "") or in dir.
//
// Writes to a folder are group-committed: concurrent updates of one
// process queue, and whoever finds no batch being written writes every
// queued update in one read-modify-write under the folder's file lock
// (one load, one save, one fsync), then the next batch, until the queue
// is empty. So many concurrent appends cost a few saves of the file, not
// one each, and each update still sees every earlier one.
type store struct {
	dir string
	mu  sync.Mutex // the in-memory state
	mem *state

	qmu     sync.Mutex // queue and writing
	queue   []*pending
	writing bool

	// cmu guards the last state read, by its file's key: every save is a
	// new file renamed into place, so a new key is a new state.
	cmu    sync.Mutex
	cached *state
	cacheK filekey.Key
}

// pending is a queued update and where its result goes.
type pending struct {
	fn   func(*state) bool
	done chan error
}

func newStore(dir string) *store {
	return &store{dir: dir, mem: seed()}
}

// view runs fn on the current state. A folder's state file is replaced
// atomically, so a read needs no lock: it sees a whole state, the last
// one saved.
func (st *store) view(fn func(*state)) error {
	if st.dir == "" {
		st.mu.Lock()
		defer st.mu.Unlock()
		fn(st.mem)
		return nil
	}
	s, err := st.loadCached()
	if err != nil {
		return err
	}
	fn(s)
	return nil
}

// loadCached returns the state in the folder, parsed once per version of
// its file: reads of an unchanged file (the common case under load, with
// hundreds of concurrent reads of a record) share one parse. The state
// returned is shared: callers only read it (state.read copies).
func (st *store) loadCached() (*state, error) {
	k, known := filekey.Of(filepath.Join(st.dir, stateFile))
	st.cmu.Lock()
	defer st.cmu.Unlock()
	if known && st.cached != nil && st.cacheK == k {
		return st.cached, nil
	}
	s, err := load(st.dir)
	if err != nil {
		return nil, err
	}
	if known {
		st.cached, st.cacheK = s, k
	}
	return s, nil
}

// update runs fn on the current state and keeps the changes when fn
// returns true. With a folder it holds an exclusive lock on the lock file
// for the read-modify-write, so two processes never lose each other's notes.
func (st *store) update(fn func(*state) bool) error {
	if st.dir == "" {
		st.mu.Lock()
		defer st.mu.Unlock()
		fn(st.mem)
		return nil
	}
	p := &pending{fn: fn, done: make(chan error, 1)}
	st.qmu.Lock()
	st.queue = append(st.queue, p)
	if st.writing {
		st.qmu.Unlock()
		return <-p.done
	}
	st.writing = true
	for {
		batch := st.queue
		st.queue = nil
		if len(batch) == 0 {
			st.writing = false
			st.qmu.Unlock()
			break
		}
		st.qmu.Unlock()
		st.commit(batch)
		st.qmu.Lock()
	}
	return <-p.done
}

// commit applies a batch of updates in one read-modify-write under the
// folder's lock and tells each its result: if the state cannot be read
// or saved, every update of the batch fails (none is kept).
func (st *store) commit(batch []*pending) {
	err := func() error {
		unlock, err := lock(st.dir)
		if err != nil {
			return err
		}
		defer unlock()
		s, err := load(st.dir)
		if err != nil {
			return err
		}
		changed := false
		for _, p := range batch {
			changed = p.fn(s) || changed
		}
		if changed {
			return save(st.dir, s)
		}
		return nil
	}()
	for _, p := range batch {
		p.done <- err
	}
}

// lock takes the folder's lock file.
func lock(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// load reads the folder's state, or the seed when there is none yet.
func load(dir string) (*state, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return seed(), nil
	}
	if err != nil {
		return nil, err
	}
	s := &state{}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, err
	}
	if s.Records == nil {
		s.Records = map[string]*Record{}
	}
	return s, nil
}

// save writes the state atomically (package atomicfile), so a reader sees
// the old state or the new, never half.
func save(dir string, s *state) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, stateFile), b, 0o600)
}

// Read returns record ref as read_record would, from the state in dir
// (which must not be ""): for tests and operators to check what was really
// written, independently of what a tool answered.
func Read(dir, ref string) (Record, bool, error) {
	var out Record
	var found bool
	err := newStore(dir).view(func(s *state) { out, found = s.read(ref) })
	return out, found, err
}

// Notes returns the notes of record ref stored in dir (nil when the record
// does not exist).
func Notes(dir, ref string) ([]Note, error) {
	r, _, err := Read(dir, ref)
	return r.Notes, err
}
