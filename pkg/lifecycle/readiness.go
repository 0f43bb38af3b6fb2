package lifecycle

import (
	"encoding/json"
	"sort"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// AddNotReadyReason returns the KruisePodReady condition message with one
// more reason to hold the pod NotReady. The message is a JSON array of
// {userAgent, key} entries, sorted by userAgent then key, shared with other
// writers; an unreadable message is replaced.
func AddNotReadyReason(message, userAgent, key string) string {
	var entries []pub.PodReadyMessageEntry
	if message != "" {
		_ = json.Unmarshal([]byte(message), &entries)
	}
	for _, e := range entries {
		if e.UserAgent == userAgent && e.Key == key {
			return encode(entries)
		}
	}
	entries = append(entries, pub.PodReadyMessageEntry{UserAgent: userAgent, Key: key})
	return encode(entries)
}

func encode(entries []pub.PodReadyMessageEntry) string {
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].UserAgent != entries[j].UserAgent {
			return entries[i].UserAgent < entries[j].UserAgent
		}
		return entries[i].Key < entries[j].Key
	})
	data, _ := json.Marshal(entries)
	return string(data)
}

// RemoveNotReadyReason returns the KruisePodReady condition message without
// one reason, whether any reason is left to hold the pod NotReady, and
// whether the reason was there at all.
func RemoveNotReadyReason(message, userAgent, key string) (rest string, held, found bool) {
	var entries, kept []pub.PodReadyMessageEntry
	if message != "" {
		_ = json.Unmarshal([]byte(message), &entries)
	}
	for _, e := range entries {
		if e.UserAgent == userAgent && e.Key == key {
			found = true
		} else {
			kept = append(kept, e)
		}
	}
	if kept == nil {
		kept = []pub.PodReadyMessageEntry{}
	}
	return encode(kept), len(kept) > 0, found
}
