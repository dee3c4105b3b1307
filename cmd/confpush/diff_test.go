package main

import (
	"strings"
	"testing"
)

func TestDiffSetsBinary(t *testing.T) {
	added, changed, removed, text := diffSets(
		map[string][]byte{"bin": {0, 1, 2}, "gone": []byte("x\n"), "same": []byte("s\n")},
		map[string][]byte{"bin": {0, 1, 3, 4}, "new": []byte("n\n"), "same": []byte("s\n")},
		"live", "local")
	if strings.Join(added, ",") != "new" || strings.Join(changed, ",") != "bin" || strings.Join(removed, ",") != "gone" {
		t.Fatalf("sets: %v %v %v", added, changed, removed)
	}
	if !strings.Contains(text, "Binary item bin differs (3 -> 4 bytes)") || strings.Contains(text, "same") {
		t.Fatalf("diff text:\n%s", text)
	}
}
