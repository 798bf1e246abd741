package httplock

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// OpenAPIFor returns the OpenAPI document of this server as an
// application serves it, to publish or generate clients from: each
// resource's lock endpoints under its own names (/orders/{orderId}/lock)
// with operation ids of its own (lockOrder, patchOrder), and of the
// record's own path only the write methods served behind Middleware
// (writes, such as "PATCH"). GET /openapi.yaml stays the generic one.
func (s *Server) OpenAPIFor(writes ...string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(openAPI, &doc); err != nil {
		return nil, err
	}
	paths := mapValue(doc.Content[0], "paths")
	if paths == nil {
		return nil, fmt.Errorf("httplock: the OpenAPI document has no paths")
	}
	served := map[string]bool{}
	for _, m := range writes {
		served[strings.ToLower(m)] = true
	}
	names, words, err := s.operationWords()
	if err != nil {
		return nil, err
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(paths.Content); i += 2 {
		key, item := paths.Content[i].Value, paths.Content[i+1]
		rest, generic := strings.CutPrefix(key, "/{resource}/{id}")
		if !generic {
			out.Content = append(out.Content, paths.Content[i], item)
			continue
		}
		for _, name := range names {
			res := s.resources[name]
			idName := res.IDName
			if idName == "" {
				idName = "id"
			}
			path := forResource(item, res.Singular, words[name], idName, served, rest == "")
			if path == nil {
				continue
			}
			out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "/" + name + "/{" + idName + "}" + rest}, path)
		}
	}
	*paths = *out
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// operationWords is the resources' names in order and each one's
// operationId word: an error when one has none or two share one.
func (s *Server) operationWords() (names []string, words map[string]string, err error) {
	names = slices.Sorted(maps.Keys(s.resources))
	words = map[string]string{}
	seen := map[string]string{}
	for _, name := range names {
		w := identifier(s.resources[name].Singular)
		if w == "" {
			w = identifier(name)
		}
		if w == "" {
			return nil, nil, fmt.Errorf("httplock: resource %q: its name and Singular have no letters to name its operations by: set Resource.Singular", name)
		}
		if other, ok := seen[w]; ok {
			return nil, nil, fmt.Errorf("httplock: resources %q and %q give their operations the same ids (%s): set Resource.Singular", other, name, w)
		}
		seen[w], words[name] = name, w
	}
	return names, words, nil
}

// forResource is the generic path item for one resource: its id, its
// operationIds and, for the record's own path, only the served methods.
func forResource(item *yaml.Node, singular, word, idName string, served map[string]bool, record bool) *yaml.Node {
	c := deepCopy(item)
	var content []*yaml.Node
	for i := 0; i+1 < len(c.Content); i += 2 {
		k, v := c.Content[i], c.Content[i+1]
		switch {
		case k.Value == "parameters":
			v.Content = []*yaml.Node{idParameter(singular, idName)}
		case record && isMethod(k.Value) && !served[k.Value]:
			continue
		case isMethod(k.Value):
			if id := mapValue(v, "operationId"); id != nil {
				id.Value = operationID(id.Value, word)
			}
		}
		content = append(content, k, v)
	}
	c.Content = content
	if record && !slices.ContainsFunc(content, func(n *yaml.Node) bool { return isMethod(n.Value) && n.Kind == yaml.ScalarNode }) {
		return nil
	}
	return c
}

func isMethod(s string) bool {
	switch s {
	case "get", "put", "post", "delete", "options", "head", "patch", "trace":
		return true
	}
	return false
}

// operationID is a generic operation's id for one resource (patchOrder, lockOrder).
func operationID(generic, word string) string {
	if verb, ok := strings.CutSuffix(generic, "Record"); ok {
		return verb + word
	}
	return generic + word
}

// identifier is s as one capitalized ASCII word ("line item" is "LineItem").
func identifier(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z' && up:
			r -= 'a' - 'A'
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9' && b.Len() > 0:
		default:
			up = true
			continue
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}

// idParameter is the path parameter of a resource's id.
func idParameter(singular, idName string) *yaml.Node {
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	schema := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{str("type"), str("string")}}
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		str("name"), str(idName), str("in"), str("path"),
		str("required"), {Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"},
		str("description"), str("The " + singular + "'s id"), str("schema"), schema,
	}}
}

// mapValue is the value of key in mapping m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func deepCopy(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = deepCopy(k)
	}
	return &c
}
