package guard

import (
	"strings"
	"testing"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
)

// fakeGuard answers Plan's questions without a database: every table in
// types exists, nothing inherits or cascades, SQL is spelled plainly.
type fakeGuard struct {
	lockstore.Guard // the rest is never called: a call panics
	types           map[string]map[string]string
}

func (f fakeGuard) ColumnTypes(_ lockstore.Conn, table string) (map[string]string, error) {
	return f.types[table], nil
}
func (fakeGuard) Inheritors(lockstore.Conn, string) ([]string, bool, error) { return nil, false, nil }
func (fakeGuard) CascadesInto(lockstore.Conn, string) ([]lockstore.GuardCascade, error) {
	return nil, nil
}
func (fakeGuard) QualifiedName(_ lockstore.Conn, table string) (string, error) {
	return "db." + table, nil
}
func (fakeGuard) Spell(_ lockstore.KeyKind, expr, _ string) string { return "S(" + expr + ")" }
func (fakeGuard) Quote(ident string) string                        { return `"` + ident + `"` }
func (fakeGuard) Backslash() string                                { return `'\'` }
func (fakeGuard) ShareRow() string                                 { return " FOR SHARE" }
func (fakeGuard) Equal(lockstore.KeyKind, string, string, string) (string, bool) {
	return "", false
}

// A root's rows, a member's rows and a join table's rows each spell the
// root's key, the member's through its link column; a table missing from
// the database gets no plan, and a member whose root is not in the
// catalog is a failure that names it, while the rest are planned.
func TestPlanSpellsEachRowsRecord(t *testing.T) {
	g := fakeGuard{types: map[string]map[string]string{
		"orders": {"id": "int"}, "lines": {"id": "int", "order_id": "int"},
		"order_tags": {"order_id": "int", "tag_id": "int"}, "notes": {"line_id": "int"},
	}}
	tables := []model.Spec{
		{Table: "orders", Key: []model.SpecColumn{{Name: "id", Kind: lockstore.KindInt}}, Links: []model.SpecColumn{{Name: "order_tags", Column: "order_id"}}},
		{Table: "lines", Key: []model.SpecColumn{{Name: "id", Kind: lockstore.KindInt}}, Root: &model.SpecRoot{Table: "orders", Column: "order_id"}},
		{Table: "notes", Key: []model.SpecColumn{{Name: "id", Kind: lockstore.KindInt}}, Root: &model.SpecRoot{Table: "gone", Column: "line_id"}},
		{Table: "absent", Key: []model.SpecColumn{{Name: "id", Kind: lockstore.KindInt}}},
	}
	fails := map[string]Failure{}
	plans, err := Plan(lockstore.Conn{}, g, tables, fails)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range plans {
		for _, r := range p.Records {
			got[p.Table] += r.Resource + "=" + r.Key("r") + ";"
		}
		if p.Version == "" {
			t.Errorf("%s: no version", p.Table)
		}
	}
	want := map[string]string{
		"orders":     `orders=S(r."id");`,
		"lines":      `orders=S(r."order_id");`,
		"order_tags": `orders=S(r."order_id");`,
	}
	for table, w := range want {
		if got[table] != w {
			t.Errorf("%s: got %q, want %q", table, got[table], w)
		}
	}
	if len(plans) != len(want) {
		t.Errorf("plans for %v, want only %v", got, want)
	}
	f, ok := fails["notes"]
	if !ok || !strings.Contains(f.Err.Error(), "its root gone") || len(f.Resources) != 1 || f.Resources[0] != "gone" {
		t.Errorf("notes: %+v", f)
	}
	if _, err := Plan(lockstore.Conn{}, g, tables, nil); err == nil {
		t.Error("without fails, a table the guard cannot follow fails the plan")
	}
}

// Gaps reads only what this process did not install at the planned
// version, and reports the tables the guard cannot follow.
func TestGapsSkipsWhatWasInstalledAtItsVersion(t *testing.T) {
	g := fakeGuard{types: map[string]map[string]string{"orders": {"id": "int"}, "lines": {"order_id": "int"}, "notes": {"x": "int"}}}
	tables := []model.Spec{
		{Table: "orders", Key: []model.SpecColumn{{Name: "id", Kind: lockstore.KindInt}}},
		{Table: "lines", Key: []model.SpecColumn{{Name: "id", Kind: lockstore.KindInt}}, Root: &model.SpecRoot{Table: "orders", Column: "order_id"}},
		{Table: "notes", Root: &model.SpecRoot{Table: "gone", Column: "x"}},
	}
	plans, _ := Plan(lockstore.Conn{}, g, tables, map[string]Failure{})
	var read []string
	gaps, err := Gaps(lockstore.Conn{}, g, tables, Shown{
		Installed: map[string]string{"orders": plans[0].Version},
		Busy:      func(string) bool { return false },
		State: func(p lockstore.GuardPlan) (string, error) {
			read = append(read, p.Table)
			return lockstore.GuardDropped, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != 1 || read[0] != "lines" {
		t.Errorf("read %v, want only lines", read)
	}
	if len(gaps) != 2 || gaps[0].Table != "lines" || gaps[0].State != lockstore.GuardDropped || gaps[1].Table != "notes" || gaps[1].State != "unguardable" {
		t.Errorf("gaps: %+v", gaps)
	}
}
