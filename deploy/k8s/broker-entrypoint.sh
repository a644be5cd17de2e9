#!/bin/sh
# Entrypoint of the sluice broker pods (mounted from the ConfigMap sluice-scripts).
#
#   broker-entrypoint.sh CONFIG_FOR_POD_0 CONFIG_FOR_POD_1 ...
#
# One StatefulSet runs one master/slave pair; pod <name>-N starts with the N-th file, so
# pod 0 is the master (brokerId 0) and pod 1 the slave (brokerId 1), each from its config
# exactly as in deploy/ (checked by deploy/check.py). What belongs to the pod, not to the
# file, is overridden here, the same keys the integration tests override: the address
# (brokerIP1 = the pod IP), the ports and the store (the PersistentVolume). The name
# servers come from NAMESRV_ADDR, which mqbroker prefers over the file's namesrvAddr.
set -eu

: "${POD_NAME:?POD_NAME must be set (downward API: metadata.name)}"
: "${POD_IP:?POD_IP must be set (downward API: status.podIP)}"
: "${NAMESRV_ADDR:?NAMESRV_ADDR must be set (the name servers, ';'-separated)}"

ordinal="${POD_NAME##*-}"
case "$ordinal" in
  '' | *[!0-9]*)
    echo "broker-entrypoint: cannot read a StatefulSet ordinal from POD_NAME=$POD_NAME" >&2
    exit 2
    ;;
esac
if [ "$ordinal" -ge "$#" ]; then
  echo "broker-entrypoint: pod $POD_NAME has ordinal $ordinal but only $# config(s) are given; raise the args with the replicas" >&2
  exit 2
fi
shift "$ordinal"
config="$1"

echo "broker-entrypoint: pod $POD_NAME starts with $config" >&2
exec "${SLUICE_BIN_DIR:-/usr/local/bin}/mqbroker" -c "$config" \
  -o "brokerIP1=$POD_IP" \
  -o "listenPort=${SLUICE_LISTEN_PORT:-10911}" \
  -o "haListenPort=${SLUICE_HA_PORT:-10912}" \
  -o "storePathRootDir=${SLUICE_STORE_DIR:-/data/store}"
