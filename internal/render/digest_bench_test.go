package render

import "testing"

// BenchmarkDigestOf: the digest the agent keeps of a template's output
// instead of the output, at the size of confbench latency's template over
// 20 × 64 KiB items (1.75 MB).
func BenchmarkDigestOf(b *testing.B) {
	data := make([]byte, 1750<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		DigestOf(data)
	}
}
