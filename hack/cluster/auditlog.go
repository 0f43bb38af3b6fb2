package cluster

import (
	"bufio"
	"bytes"
	"os"
)

// EachAuditEvent calls each with every event of the JSON audit log at
// path, from offset on. The API server's log backend was seen (11-26, a
// soak run) to leave an event cut short with the next one written after
// it on the same line, so each line is split at the events it holds: the
// next one is read, and the cut one is passed on like any other (it fails
// to decode). The slice passed is valid only during the call.
func EachAuditEvent(path string, offset int64, each func(event []byte)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return err
	}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 16<<20)
	for s.Scan() {
		for _, event := range auditEvents(s.Bytes()) {
			each(event)
		}
	}
	return s.Err()
}

// auditEventStart begins every event of a JSON audit log.
var auditEventStart = []byte(`{"kind":"Event",`)

// auditEvents splits a line of the log into the events it holds: one,
// unless an event was cut short and the next one written after it.
func auditEvents(line []byte) [][]byte {
	var events [][]byte
	for len(line) > 0 {
		next := bytes.Index(line[1:], auditEventStart)
		if next < 0 {
			return append(events, line)
		}
		events = append(events, line[:next+1])
		line = line[next+1:]
	}
	return events
}
