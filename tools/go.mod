module github.com/zkconf/zkconf/tools

go 1.25.0

require (
	github.com/Masterminds/sprig/v3 v3.3.0
	github.com/chromedp/cdproto v0.159.0
	github.com/chromedp/chromedp v0.23.0
	github.com/fsnotify/fsnotify v1.10.1
	github.com/go-zookeeper/zk v1.0.4
	github.com/zkconf/zkconf v0.0.0
	golang.org/x/sys v0.47.0
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	dario.cat/mergo v1.0.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/Masterminds/goutils v1.1.1 // indirect
	github.com/Masterminds/semver/v3 v3.3.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/huandu/xstrings v1.5.0 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/shopspring/decimal v1.4.0 // indirect
	github.com/spf13/cast v1.10.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

replace github.com/zkconf/zkconf => ../

// The patched go-zookeeper the zkconf module builds with (its go.mod says
// why; a replace reaches no other module, so this one repeats it).
replace github.com/go-zookeeper/zk => ../third_party/go-zookeeper-zk

// The semver copy whose regular expressions compile at first use (the
// zkconf module's go.mod says why).
replace github.com/Masterminds/semver/v3 => ../third_party/semver

// The decimal copy whose ln(10) is computed at first use (the zkconf
// module's go.mod says why).
replace github.com/shopspring/decimal => ../third_party/decimal

// The gotenv copy whose regular expressions compile at first use (the
// zkconf module's go.mod says why).
replace github.com/subosito/gotenv => ../third_party/gotenv
