#!/bin/sh
# plb's network fault hooks for a Kubernetes fleet, as Chaos Mesh NetworkChaos objects: one object
# per replica and kind (plb-<kind>-db-<index>), applied by the fault and deleted by `heal`.
#   netchaos.sh <action> <index> [args]
#   partition <index> <direction>         clients cut from pod db-<index> (to, from or both)
#   partition-replication <index> <dir>   db-<index> cut from the primary db-0 (its WAL stream)
#   delay <index> <ms> <jitter-ms>        loss <index> <percent>        bandwidth <index> <bit/s>
#   heal <index> <what|all>
# Environment: NAMESPACE (default db), APP_SELECTOR (the clients' label, default app=plb),
# KUBECTL (default kubectl; a test points it at a recorder). Chaos Mesh has no reset: refused.
set -eu
ns=${NAMESPACE:-db}
app=${APP_SELECTOR:-app=plb}
kubectl=${KUBECTL:-kubectl}
action=$1
index=$2
pod="db-$index"

# plb's direction (toward the replica's port = in) in Chaos Mesh's terms (from the pod = to).
direction() {
  case "$1" in in) echo from ;; out) echo to ;; *) echo both ;; esac
}

# The object for one kind: its spec lines after the common header, on stdin.
apply() {
  kind=$1
  {
    printf 'apiVersion: chaos-mesh.org/v1alpha1\nkind: NetworkChaos\n'
    printf 'metadata:\n  name: plb-%s-%s\n  namespace: %s\n  labels: {app.kubernetes.io/managed-by: plb}\n' "$kind" "$pod" "$ns"
    printf 'spec:\n  mode: all\n  selector:\n    namespaces: [%s]\n' "$ns"
    printf '    labelSelectors: {statefulset.kubernetes.io/pod-name: %s}\n' "$pod"
    cat
  } | "$kubectl" apply -f -
}

# The peers of a fault that needs a target: the clients, or the primary for the WAL stream.
clients_target() {
  printf '  target:\n    mode: all\n    selector:\n      labelSelectors: {%s}\n' "$(echo "$app" | sed 's/=/: /')"
}

case "$action" in
  partition)
    { printf '  action: partition\n  direction: %s\n' "$(direction "$3")"; clients_target; } | apply partition ;;
  partition-replication)
    printf '  action: partition\n  direction: %s\n  target:\n    mode: all\n    selector:\n      labelSelectors: {statefulset.kubernetes.io/pod-name: db-0}\n' \
      "$(direction "$3")" | apply partition-replication ;;
  delay)
    { printf "  action: delay\n  direction: both\n  delay: {latency: '%sms', jitter: '%sms', correlation: '0'}\n" "$3" "$4"; clients_target; } | apply delay ;;
  loss)
    { printf "  action: loss\n  direction: both\n  loss: {loss: '%s', correlation: '0'}\n" "$3"; clients_target; } | apply loss ;;
  bandwidth)
    # tbf in the pod: rate in bits per second, a buffer of one 64 KiB burst.
    { printf "  action: bandwidth\n  direction: to\n  bandwidth: {rate: '%sbps', limit: 1048576, buffer: 65536}\n" "$3"; clients_target; } | apply bandwidth ;;
  heal)
    case "$3" in
      all) kinds="partition partition-replication delay loss bandwidth" ;;
      partition) kinds="partition partition-replication" ;;
      *) kinds=$3 ;;
    esac
    for k in $kinds; do "$kubectl" -n "$ns" delete networkchaos "plb-$k-$pod" --ignore-not-found; done ;;
  *)
    echo "netchaos.sh: $action is not a NetworkChaos action (Chaos Mesh has no reset)" >&2
    exit 2 ;;
esac
