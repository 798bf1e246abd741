package lockstore

import (
	"fmt"
	"strconv"
	"strings"
)

// Plan collects the statements an install would run (guard install
// --print-sql): a planning Conn runs reads and session settings and
// records the rest with literal arguments, answering its own read-backs.
type Plan struct {
	stmts  []string
	key    string            // the guard key the plan made, "" before
	seal   string            // the seal's name the plan made (MySQL), "" before
	views  map[string]string // the sealed views the plan made (MySQL), by table
	probes []string          // the table probes the plan made (MySQL, guard_probe_mysql.go)
	mysql  bool              // literals are MySQL's (backslashes doubled)
	fresh  bool              // the lock table and its catalog are the plan's to make: nothing to read in them
}

// NewPlan is an empty plan; fresh: the lock table does not exist yet.
func NewPlan(fresh bool) *Plan { return &Plan{fresh: fresh} }

// fresh says whether c plans on a database without the lock table.
func (c Conn) fresh() bool { return c.plan != nil && c.plan.fresh }

// Statements are the statements recorded, in order.
func (p *Plan) Statements() []string { return append([]string(nil), p.stmts...) }

// Planning is c recording into p the statements that would change something.
func (c Conn) Planning(p *Plan) Conn {
	p.mysql = c.db.Dialector.Name() == "mysql"
	c.plan = p
	return c
}

// runsWhenPlanned says whether query runs for real when planned: a read, or
// a session setting nobody else sees.
func runsWhenPlanned(query string) bool {
	q := strings.ToUpper(strings.TrimSpace(query))
	return strings.HasPrefix(q, "SELECT ") || strings.HasPrefix(q, "SET ")
}

// record adds query, with args written in, to the plan.
func (p *Plan) record(query string, args []any) error {
	q, err := p.inline(query, args)
	if err != nil {
		return err
	}
	p.stmts = append(p.stmts, q)
	return nil
}

// inline writes args into query's placeholders (? or $n) as literals.
func (p *Plan) inline(query string, args []any) (string, error) {
	if len(args) == 0 {
		return query, nil
	}
	lits := make([]string, len(args))
	for i, a := range args {
		l, err := p.literal(a)
		if err != nil {
			return "", err
		}
		lits[i] = l
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		switch ch := query[i]; {
		case ch == '?' && p.mysql:
			if n >= len(lits) {
				return "", fmt.Errorf("offlinelock: planning %q: more placeholders than arguments", query)
			}
			b.WriteString(lits[n])
			n++
		case ch == '$' && !p.mysql && i+1 < len(query) && query[i+1] >= '1' && query[i+1] <= '9':
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			k, _ := strconv.Atoi(query[i+1 : j])
			if k > len(lits) {
				return "", fmt.Errorf("offlinelock: planning %q: placeholder $%d without an argument", query, k)
			}
			b.WriteString(lits[k-1])
			i = j - 1
		default:
			b.WriteByte(ch)
		}
	}
	return b.String(), nil
}

// literal is a as a SQL literal.
func (p *Plan) literal(a any) (string, error) {
	str := func(s string) string {
		if p.mysql {
			s = strings.ReplaceAll(s, `\`, `\\`)
		}
		return sqlLiteral(s)
	}
	switch v := a.(type) {
	case string:
		return str(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = str(s)
		}
		return "ARRAY[" + strings.Join(parts, ", ") + "]::text[]", nil
	}
	return "", fmt.Errorf("offlinelock: planning: no literal for a %T", a)
}

// view is the sealed view of table the plan made (nil plan: none).
func (p *Plan) view(table string) (string, bool) {
	if p == nil {
		return "", false
	}
	v, ok := p.views[table]
	return v, ok
}

// madeView records that the plan made view (quoted) of table.
func (p *Plan) madeView(table, view string) {
	if p == nil {
		return
	}
	if p.views == nil {
		p.views = map[string]string{}
	}
	p.views[table] = view
}
