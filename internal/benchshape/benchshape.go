// Package benchshape holds the shapes confbench latency measures that the
// repository's Go benchmarks measure too, so that a benchmark of one
// package and the whole-process benchmark cannot drift apart.
package benchshape

// LatencyTemplate is the template both the agent's template target and
// the confd-style follower render in confbench latency: the generation on
// the first line (the benchmark reads it), then sprig helpers over every
// item, so that a fast path for the dir target cannot hide a slow
// template: the names sorted (sortAlpha) and as JSON (toJson), every item
// base64-encoded (b64enc) and indented (nindent), and the whole set as
// one JSON object (dict, set, toJson), hashed (sha256sum).
const LatencyTemplate = `gen={{ printf "%08d" generation }}
{{- $all := dict }}
{{- $sorted := names | sortAlpha }}
names: {{ $sorted | toJson }}
{{- range $n := $sorted }}
{{- $v := item $n }}
{{- $_ := set $all $n $v }}
{{ $n }}: {{ len $v }}{{ $v | b64enc | nindent 2 }}
{{- end }}
set: {{ $all | toJson | sha256sum }}
`
