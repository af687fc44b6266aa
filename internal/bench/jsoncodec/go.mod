module github.com/sluicehq/sluice/internal/bench/jsoncodec

go 1.26.8

require (
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875
	github.com/goccy/go-json v0.12.0
	github.com/segmentio/encoding v0.5.4
)

require (
	github.com/segmentio/asm v1.1.3 // indirect
	golang.org/x/sys v0.0.0-20211110154304-99a53858aa08 // indirect
)
