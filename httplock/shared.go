package httplock

import (
	"net/http"
	"slices"
	"strings"
)

// MaxStreamRecords is how many records one stream of GET /lock/events may
// watch (a browser's open edit pages, offlinelock.js): more is a 400.
const MaxStreamRecords = 64

// sharedEvents is GET /lock/events?watch=res/id&…: several records' events
// in one stream, which a browser's tabs share. Each record is checked as
// its own stream is; one refused refuses the stream.
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
