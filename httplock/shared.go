package httplock

import (
	"net/http"
	"slices"
	"strings"
)

// MaxStreamRecords is how many records one stream of GET /lock/events may
// watch (a browser's open edit pages, offlinelock.js): more is a 400.
const MaxStreamRecords = 64

// sharedEvents is GET /lock/events?watch=customers/129&watch=orders/ord_1:
// the lock events of several records in one text/event-stream, each
// event naming its record (resource, id), as the record's own stream
// tells them, each record's state first. It is the stream the tabs of one
// browser share, so that they hold one of the browser's few connections
// to the host between them instead of one each. Every record is checked
// as its own stream's open is (a resource and a record that exist,
// Resource.Allow's leave to watch): a record the caller may not watch
// refuses the whole stream, with that record's status.
func (s *Server) sharedEvents(w http.ResponseWriter, r *http.Request) {
	s.serveStream(w, r, func() ([]watched, string, error) {
		names, err := watchList(r.URL.Query()["watch"])
		if err != nil {
			return nil, "", err
		}
		list, principal := make([]watched, 0, len(names)), ""
		for _, n := range names {
			name, id, _ := strings.Cut(n, "/")
			// The record's own request, as Exists and Allow read it (its
			// id a path value).
			one := r.Clone(r.Context())
			one.SetPathValue("id", id)
			res, target, p, err := s.liveCheck(one, s.resources[name], ActionWatch)
			if err != nil {
				return nil, "", err
			}
			list, principal = append(list, watched{res, target}), p
		}
		return list, principal, nil
	})
}

// watchList is the records a shared stream asks for, "resource/id" each,
// sorted and each once: at least one, at most MaxStreamRecords.
func watchList(raw []string) ([]string, error) {
	list := slices.Clone(raw)
	slices.Sort(list)
	list = slices.Compact(list)
	if len(list) == 0 || len(list) > MaxStreamRecords {
		return nil, badRequest("watch names 1 to %d records, each as resource/id", MaxStreamRecords)
	}
	for _, n := range list {
		if name, id, ok := strings.Cut(n, "/"); !ok || name == "" || id == "" {
			return nil, badRequest("each watch is resource/id")
		}
	}
	return list, nil
}
