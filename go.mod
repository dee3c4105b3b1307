module github.com/zkconf/zkconf

go 1.25.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/Masterminds/sprig/v3 v3.3.0
	github.com/coreos/go-systemd/v22 v22.7.0
	github.com/fsnotify/fsnotify v1.10.1
	github.com/go-zookeeper/zk v1.0.4
	github.com/hashicorp/go-multierror v1.1.1
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.10
	github.com/spf13/viper v1.21.0
	go.uber.org/goleak v1.3.0
	go.yaml.in/yaml/v3 v3.0.5
	golang.org/x/sys v0.47.0
)

require (
	dario.cat/mergo v1.0.1 // indirect
	github.com/Masterminds/goutils v1.1.1 // indirect
	github.com/Masterminds/semver/v3 v3.3.0 // indirect
	github.com/cpuguy83/go-md2man/v2 v2.0.6 // indirect
	github.com/go-viper/mapstructure/v2 v2.4.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/huandu/xstrings v1.5.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/pelletier/go-toml/v2 v2.2.4 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/sagikazarmark/locafero v0.11.0 // indirect
	github.com/shopspring/decimal v1.4.0 // indirect
	github.com/sourcegraph/conc v0.3.1-0.20240121214520-5f936abd7ae8 // indirect
	github.com/spf13/afero v1.15.0 // indirect
	github.com/spf13/cast v1.10.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/subosito/gotenv v1.6.0 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

// go-zookeeper v1.0.4, the newest release, has a data race: a connection
// holding watches that reconnects reads lastZxid while its receive loop
// writes it (go-zookeeper/zk#35, open since 2020). zkconf builds with a
// patched copy until upstream releases a fix; the copy also adds a multiRead
// client (Conn.MultiRead, Conn.MultiReadOps) that cache and publish call.
// third_party/go-zookeeper-zk/README.md says what changed. A replace applies
// only when zkconf is the main module: a program that imports zkconf must add
// this replace itself (README.md, "Using zkconf as a library").
replace github.com/go-zookeeper/zk => ./third_party/go-zookeeper-zk

// Masterminds/semver (through sprig, the template helpers) compiles five
// regular expressions at package initialisation: about 170 KiB and 1,000
// allocations at every start of every zkconf binary, 1-7 ms of a
// `confpush publish` on this project's machine, though only the semver
// template helpers use them. The copy compiles each at its first use;
// third_party/semver/README.md says what changed. Like the go-zookeeper
// replace, it applies only when zkconf is the main module.
replace github.com/Masterminds/semver/v3 => ./third_party/semver

// shopspring/decimal (through sprig, the template helpers) parses ln(10) to
// 4,000 digits, thirteen times, in package initialisation: 46 KB and 185
// allocations at every start of every zkconf binary, the largest package
// initialisation left in `confpush` (issue 27). The copy computes it at
// its first use; third_party/decimal/README.md says what changed. Like the
// other replaces, it applies only when zkconf is the main module.
replace github.com/shopspring/decimal => ./third_party/decimal

// subosito/gotenv (through viper's dotenv codec) compiles four regular
// expressions in package initialisation: 30 KB and 230 allocations at every
// start, though confpush and confagent never read a dotenv file. The copy
// compiles each at its first use; third_party/gotenv/README.md says what
// changed. Like the other replaces, it applies only when zkconf is the main
// module.
replace github.com/subosito/gotenv => ./third_party/gotenv
