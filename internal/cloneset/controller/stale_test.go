package controller

import (
	"errors"
	"strings"
	"testing"
)

func TestStaleErrorNamesItsPod(t *testing.T) {
	if !strings.Contains((&staleError{pod: "web-a", err: errors.New("test failed")}).Error(), "web-a") {
		t.Error("a stale error does not name its pod")
	}
}
