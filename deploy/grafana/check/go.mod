module sluice/deploy/grafana-check

go 1.24

require github.com/grafana/grafana-foundation-sdk/go v0.0.22
