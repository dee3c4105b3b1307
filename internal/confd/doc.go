// Package confd renders confd templates as confd does: its key-value store
// (memkv), its template functions and a template resource's key
// selection, over a map of absolute keys ("/database/host" → value). It is
// pure: it knows nothing of zkconf's snapshots (a snapshot seen as a key
// tree is the caller's few lines) and reads the host only through Host.
// ZooKeeperValues, for tests and tools standing in for a confd host, reads
// a ZooKeeper tree as confd's ZooKeeper backend does, through the client
// it is given.
//
// Use: view := Resource{Prefix, Keys}.View(confdPrefix, tree); then
// Parse(base(src), text, FuncMap(NewStore(view), host)) and Execute with
// nil data.
//
// # Where the semantics come from
//
// confd cannot be installed here (the Go module proxy refuses it and
// memkv; Debian packages neither), so every behaviour is taken from the
// source of confd's master branch (kelseyhightower/confd, with memkv
// v0.1.1 as its Gopkg.lock pins) and pinned in this package's tests with
// the expected output written out:
//
//   - memkv v0.1.1 (vendor/github.com/kelseyhightower/memkv/store.go in
//     confd): Store.Get, GetValue, GetAll, GetAllValues, List, ListDir,
//     Exists, KeyError, and the helpers stripKey, pathToTerms and
//     samePrefixTerms, ported as they are (store.go);
//   - resource/template/template_funcs.go, newFuncMap and the functions
//     it names (Getenv, CreateMap, UnmarshalJsonObject/Array, Reverse,
//     SortByLength, SortKVByLength, Seq, Base64Encode/Decode) (funcs.go);
//   - resource/template/resource.go, NewTemplateResource (the prefix) and
//     setVars (util.AppendPrefix, then the prefix stripped from each key),
//     and backends/zookeeper/client.go, GetValues and nodeWalk (which
//     nodes a key reads) (resource.go);
//   - docs/templates.md and docs/template-resources.md for the intent.
//
// # What is pinned
//
// In store_test.go, funcs_test.go, resource_test.go, refused_test.go and,
// for whole templates (nginx upstreams from gets, an lsdir loop over JSON
// values, define/template with map, a missing key's error), testdata/
// through render_test.go.
//
// Keys: get and getv of a missing key fail with "key does not exist: /x";
// getv with a default returns the first default (even "") for a missing
// key, never for a key stored empty; exists is false for a directory.
// Keys are matched exactly as spelled: no cleaning, so "/a/" and "a" are
// other keys than "/a".
//
// gets: path.Match globs ("*" stops at "/"), sorted by key (web1 < web10
// < web2); no match is [] and no error; a malformed pattern is "syntax
// error in pattern", but only when the store holds a key. getvs: the same
// values sorted by value, not by key. ls: the names one level below, of
// leaves and directories alike, sorted; a leaf lists itself, and with a
// trailing slash nothing; ls "/" lists only the leaves directly under the
// root, and lsdir "/" is always empty (memkv compares the terms of "/"
// with a key's parent directory); an unclean path ("/a//b") lists the
// keys' first element. lsdir: only names with keys below them.
//
// Functions: base and dir are path.Base and path.Dir; split, join,
// toUpper, toLower, contains, replace (four arguments), trimSuffix are the
// strings functions; json and jsonArray decode numbers as float64
// (1000000 prints 1e+06), "null" is map[], and fail with encoding/json's
// message; map needs string keys and an even count; getenv treats an
// empty variable as unset; base64Decode fails with "illegal base64 data
// at input byte N"; parseBool and atoi are strconv's, with strconv's
// messages; add, sub, mul, div and mod take ints, and div or mod by zero
// fails with "runtime error: integer divide by zero"; seq is inclusive
// and empty when reversed; reverse reverses a []string or []KVPair in
// place and leaves everything else as it is, including what gets returns
// (memkv's named KVPairs type: reverse (gets ...) is a no-op in confd,
// reverse (sortKVByLength (gets ...)) is not); sortByLength and
// sortKVByLength use sort.Sort, so ties keep their order up to 12
// elements (insertion sort) and beyond that follow the Go release's
// algorithm.
//
// text/template around them: confd executes with nil data, so {{.}} and
// {{.key}} print "<no value>", as does a missing member of a json map; a
// function's error stops the render with text/template's message
// ("template: NAME:LINE:COL: executing ... error calling getv: ...");
// an argument of the wrong type fails before the call ("wrong type for
// value; expected int; got string").
//
// Resources: confd's own prefix, when set, replaces the resource's prefix
// (it is not joined to it); a leading "/" is added; each key is
// path.Join(prefix, key) with every "/*" removed; a key whose node does
// not exist fails the whole resource (confd's ZooKeeper backend); a node
// with children is never read, only the childless nodes below it; the
// prefix is stripped as a raw string, so an unclean prefix is not.
//
// # Deliberate differences
//
// datetime and the DNS lookups (lookupIP, lookupIPV4, lookupIPV6,
// lookupSRV) are refused: Parse names every use with the zkconf
// alternative (docs/confagent.md, "confd templates"). seq refuses more
// than MaxSeq elements and replace a result over MaxStringBytes, where
// confd would exhaust memory. confd's crypt functions (cget, cgets,
// cgetv, cgetvs, with -pgp-private-key) are not provided.
//
// # Not determined from the source
//
// Which release a fleet runs: older confd releases joined the two
// prefixes (filepath.Join("/", confd's, the resource's)) where master
// replaces one with the other, and the newest functions (parseBool, seq,
// atoi, the arithmetic) may postdate a fleet's binary. And behaviour that
// depends on the Go release confd was built with: the order of more than
// 12 equal lengths in sortByLength/sortKVByLength; map printing order
// (fmt sorts map keys since Go 1.12); whether path.Match reports a
// malformed pattern when the match fails before reaching the bad part
// (current releases always do, older ones did not); the column
// text/template names in an error. This package behaves as master built
// with the Go that builds zkconf.
package confd
