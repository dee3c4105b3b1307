package layout

import "testing"

func TestPathsEscapeOnceAndStayValues(t *testing.T) {
	p := New("/config/web%1", "/zkconf")
	if got, want := p.Base(), "/zkconf/roots/config%2Fweb%251"; got != want {
		t.Fatalf("Base() = %q, want %q", got, want)
	}
	if got, want := p.Blob("abc"), "/zkconf/roots/config%2Fweb%251/blobs/abc"; got != want {
		t.Fatalf("Blob() = %q, want %q", got, want)
	}
	// A literal, and a copy whose Root changed after New, compute the base
	// from their own fields.
	lit := Paths{Root: "/config/web%1", Meta: "/zkconf"}
	if lit.Base() != p.Base() || lit.HistoryNode(7) != p.HistoryNode(7) {
		t.Fatalf("literal %q differs from New %q", lit.Base(), p.Base())
	}
	q := p
	q.Root = "/other"
	if got, want := q.Blobs(), "/zkconf/roots/other/blobs"; got != want {
		t.Fatalf("changed copy: Blobs() = %q, want %q", got, want)
	}
	q = p
	q.Meta = "/m"
	if got, want := q.Status(), "/m/roots/config%2Fweb%251/status"; got != want {
		t.Fatalf("changed copy: Status() = %q, want %q", got, want)
	}
	if p.Base() != "/zkconf/roots/config%2Fweb%251" {
		t.Fatal("the original changed with its copy")
	}
}

func BenchmarkBlobPath(b *testing.B) {
	p := New("/config/web", "/zkconf")
	b.ReportAllocs()
	for b.Loop() {
		_ = p.Blob("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	}
}

// TestRootOfKey: RootOfKey inverts RootKey, and refuses names RootKey
// cannot have made.
func TestRootOfKey(t *testing.T) {
	for _, root := range []string{"/config", "/config/web", "/a%2Fb/c", "/100%", "/x%25y"} {
		got, ok := RootOfKey(RootKey(root))
		if !ok || got != root {
			t.Errorf("RootOfKey(RootKey(%q)) = %q, %v", root, got, ok)
		}
	}
	for _, key := range []string{"", "a/b", "a%2", "a%41", "%2Fconfig", "config%2F", "zookeeper", "a%2F%2Fb"} {
		if got, ok := RootOfKey(key); ok {
			t.Errorf("RootOfKey(%q) = %q, want refused", key, got)
		}
	}
}
