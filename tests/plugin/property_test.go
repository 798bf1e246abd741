package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"gorm.io/gorm"
	"pgregory.net/rapid"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// lockModel is the contract as a map: who holds each key, and how.
type lockModel struct {
	writer  map[uint]string           // key -> session holding Write
	readers map[uint]map[string]bool  // key -> sessions holding Read
	gen     map[uint]int64            // key -> highest generation granted
	mine    map[uint]map[string]int64 // key -> session -> generation of its lock
}

func (m *lockModel) holders(k uint) []string {
	var out []string
	if w := m.writer[k]; w != "" {
		out = append(out, w+":write")
	}
	for s := range m.readers[k] {
		out = append(out, s+":read")
	}
	sort.Strings(out)
	return out
}

func (m *lockModel) count(s string) int64 {
	var n int64
	for k, w := range m.writer {
		if w == s {
			n++
		}
		_ = k
	}
	for _, rs := range m.readers {
		if rs[s] {
			n++
		}
	}
	return n
}

// TestContractProperties runs random sequences of Acquire, Release,
// ReleaseAll, Renew, ForceRelease and Holders by 3 sessions on 3 keys
// against the lock table and against lockModel, and requires the same
// answers: shared reads, exclusive writes, the upgrade rule, idempotent
// re-acquire, refusal instead of waiting, growing generations.
func TestContractProperties(t *testing.T) {
	for _, d := range testkit.Databases() {
		t.Run(d.Name, func(t *testing.T) {
			admin := offlinelock.Owner{Session: "admin", User: "admin"}
			db, p := testkit.SetupOn(t, d.Open(t), offlinelock.Config{TTL: time.Hour, Authorize: func(ctx context.Context, _ string, _ offlinelock.Lock) error {
				if o, _ := offlinelock.OwnerFrom(ctx); o == admin {
					return nil
				}
				return errors.New("no")
			}})
			sessions := []string{"S1", "S2", "S3"}
			round := uint(0)
			runs, steps := 0, 0
			rapid.Check(t, func(rt *rapid.T) {
				round++
				base := round * 10 // fresh keys for every run
				m := &lockModel{writer: map[uint]string{}, readers: map[uint]map[string]bool{}, gen: map[uint]int64{}, mine: map[uint]map[string]int64{}}
				own := func(s string) *gorm.DB { return testkit.As(db, offlinelock.Owner{Session: s, User: "u" + s}) }
				key := func(rt *rapid.T) uint { return base + uint(rapid.IntRange(1, 3).Draw(rt, "key")) }
				session := func(rt *rapid.T) string { return rapid.SampledFrom(sessions).Draw(rt, "session") }
				defer func() {
					for _, s := range sessions {
						p.ReleaseAll(db, s)
					}
				}()
				runs++
				rt.Repeat(map[string]func(*rapid.T){
					"acquire": func(rt *rapid.T) {
						steps++
						s, k := session(rt), key(rt)
						access := rapid.SampledFrom([]offlinelock.Access{offlinelock.Read, offlinelock.Write}).Draw(rt, "access")
						l, err := p.Acquire(own(s), &testkit.Customer{ID: k}, access)
						w, rs := m.writer[k], m.readers[k]
						othersRead := false
						for r := range rs {
							othersRead = othersRead || r != s
						}
						want := !(w != "" && w != s) && !(access == offlinelock.Write && othersRead)
						if want != (err == nil) {
							rt.Fatalf("%s acquire %s of %d: got %v, model says granted=%v (holders %v)", s, access, k, err, want, m.holders(k))
						}
						if err != nil {
							if !errors.Is(err, offlinelock.ErrLocked) {
								rt.Fatalf("refusal is not ErrLocked: %v", err)
							}
							return
						}
						refresh := w == s || (access == offlinelock.Read && rs[s])
						if refresh && l.Generation != m.mine[k][s] {
							rt.Fatalf("re-acquire changed the generation: %d, was %d", l.Generation, m.mine[k][s])
						}
						if !refresh && l.Generation <= m.gen[k] {
							rt.Fatalf("a new grant's generation %d is not above %d", l.Generation, m.gen[k])
						}
						m.gen[k] = max(m.gen[k], l.Generation)
						if m.mine[k] == nil {
							m.mine[k] = map[string]int64{}
						}
						m.mine[k][s] = l.Generation
						switch {
						case w == s:
						case access == offlinelock.Write:
							m.writer[k], m.readers[k] = s, nil
						default:
							if m.readers[k] == nil {
								m.readers[k] = map[string]bool{}
							}
							m.readers[k][s] = true
						}
					},
					"release": func(rt *rapid.T) {
						steps++
						s, k := session(rt), key(rt)
						err := p.Release(own(s), &testkit.Customer{ID: k})
						held := m.writer[k] == s || m.readers[k][s]
						if held != (err == nil) || (err != nil && !errors.Is(err, offlinelock.ErrNotLocked)) {
							rt.Fatalf("%s release %d: got %v, model held=%v", s, k, err, held)
						}
						if m.writer[k] == s {
							m.writer[k] = ""
						}
						delete(m.readers[k], s)
					},
					"releaseAll": func(rt *rapid.T) {
						steps++
						s := session(rt)
						n, err := p.ReleaseAll(own(s), s)
						if err != nil || n != m.count(s) {
							rt.Fatalf("%s releaseAll: %d, %v; model %d", s, n, err, m.count(s))
						}
						for k, w := range m.writer {
							if w == s {
								m.writer[k] = ""
							}
						}
						for _, rs := range m.readers {
							delete(rs, s)
						}
					},
					"renew": func(rt *rapid.T) {
						steps++
						s := session(rt)
						n, err := p.Renew(own(s), s)
						if err != nil || n != m.count(s) {
							rt.Fatalf("%s renew: %d, %v; model %d", s, n, err, m.count(s))
						}
					},
					"forceRelease": func(rt *rapid.T) {
						steps++
						k := key(rt)
						err := p.ForceRelease(testkit.As(db, admin), "customers", fmt.Sprint(k))
						held := len(m.holders(k)) > 0
						if held != (err == nil) {
							rt.Fatalf("force release %d: %v, model held=%v", k, err, held)
						}
						m.writer[k], m.readers[k] = "", nil
					},
					"holders": func(rt *rapid.T) {
						steps++
						k := key(rt)
						h, err := p.Holders(db, &testkit.Customer{ID: k})
						if err != nil {
							rt.Fatal(err)
						}
						var got []string
						for _, l := range h {
							if l.Token != "" {
								rt.Fatalf("Holders showed a token")
							}
							got = append(got, l.Owner.Session+":"+string(l.Access))
						}
						sort.Strings(got)
						if fmt.Sprint(got) != fmt.Sprint(m.holders(k)) {
							rt.Fatalf("holders of %d: %v, model %v", k, got, m.holders(k))
						}
					},
				})
			})
			t.Logf("%s: %d random runs, %d operations, all as the model says", d.Name, runs, steps)
		})
	}
}
