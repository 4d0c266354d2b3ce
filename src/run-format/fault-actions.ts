/**
 * The fault actions a plan can take, one spec each: what a plan says (its fields, the replica state
 * it needs and leads to, how it changes K+, the phase it opens, what undoes it). Everything that
 * lists or checks actions reads this: the plan schema and its checks, the injector, the plan's dry
 * run, the cluster file's hooks and the recovery metrics. How each driver applies an action is the
 * driver's `faults` (cluster/driver.ts), keyed by the same names; docs/development.md has the steps.
 */

/** A replica's state as the plan sees it: which actions it can take next. */
export type PlanReplicaState = 'up' | 'down' | 'stopped' | 'paused' | 'cut';

/**
 * The kind of phase an action opens: `down` a replica left (K+ falls); `recovery` one restarted and
 * catches up (its recovery tail is measured); `restored` a fault lifted without a restart;
 * `degraded` a replica is slower or staler but still counts; `mark` nothing changed (a boundary the
 * plan asked for, as a placebo's).
 */
type FaultPhaseKind = 'down' | 'recovery' | 'restored' | 'degraded' | 'mark';
/** A phase's kind: the run's own (`ref`, `steady`), or the one its opening action's spec names. */
export type PhaseKind = 'ref' | 'steady' | FaultPhaseKind;

/**
 * The fields an event may carry besides at, replica and action. `kind` picks the check the plan
 * file applies (plan.ts); `shown` is the unit plan show prints the value with (none: not shown).
 */
export const FAULT_FIELDS = {
  cpus: { kind: 'positive-number', what: 'the new CPU quota (cores)', shown: 'cpus' },
  weight: { kind: 'positive-number', what: 'the new static weight', shown: null },
  direction: { kind: 'direction', what: 'in, out or both (default both)', shown: '' },
  percent: { kind: 'percent', what: 'the share of packets dropped, in percent (0 < p <= 100)', shown: '%' },
  what: { kind: 'network-action', what: 'the network fault to end (default: every one)', shown: '' },
  link: {
    kind: 'link',
    what: "clients (the replica's client port, default), replication (its WAL stream from the primary) or all",
    shown: '',
  },
  ms: { kind: 'milliseconds', what: 'the delay added to each packet, in ms (0 < ms <= 60000)', shown: 'ms' },
  jitter: { kind: 'milliseconds', what: 'a uniform spread around ms, in ms (default 0)', shown: 'ms jitter' },
  rate: {
    kind: 'rate',
    what: 'the link\'s rate: "10mbit", "512kbit", "1gbit" (bits per second)',
    shown: 'bit/s',
  },
} as const satisfies Record<string, { kind: FaultFieldKind; what: string; shown: string | null }>;
/** The directions of a partition: toward the replica's port, from it, or both. */
export const DIRECTIONS = ['in', 'out', 'both'] as const;
export type Direction = (typeof DIRECTIONS)[number];
/** Which of a replica's links a partition cuts. */
export const LINKS = ['clients', 'replication', 'all'] as const;
export type Link = (typeof LINKS)[number];
/** The value each kind of field holds (plan.ts has one check per kind). */
interface FieldValues {
  'positive-number': number;
  percent: number;
  direction: Direction;
  'network-action': NetworkAction;
  link: Link;
  milliseconds: number;
  /** Bits per second. */
  rate: number;
}
export type FaultFieldKind = keyof FieldValues;
export type FaultFieldName = keyof typeof FAULT_FIELDS;
export const FAULT_FIELD_NAMES = Object.keys(FAULT_FIELDS) as FaultFieldName[];
/** An event's fields, as the resolved plan holds them. */
export type FaultFields = { [F in FaultFieldName]?: FieldValues[(typeof FAULT_FIELDS)[F]['kind']] };

/** What the driver's status must show once the action took (the injector checks it off the path). */
export type StatusCheck = 'not-up' | 'paused' | 'not-paused';

export interface FaultActionSpec<Action extends string = string> {
  /** For the plan schema's description: `down: kill`; neighbours with one summary share it. */
  summary: string;
  /** Fields it needs or allows; any other field is refused. */
  fields: { readonly [F in FaultFieldName]?: 'required' | 'optional' };
  /** The states it can be taken in, and how a plan error names them. */
  from: { readonly states: readonly PlanReplicaState[]; readonly need: string };
  /** The state it leads to. */
  after: PlanReplicaState | 'unchanged';
  /** How it changes K+, the healthy replicas (a slow or lagging replica still counts). */
  survivors: -1 | 0 | 1;
  /** The kind of the phase it opens. */
  phase: FaultPhaseKind;
  /** The action a run that ends with this one in effect takes to undo it (null: nothing to undo). */
  undoneBy: Action | null;
  /** The status the replica shows after it; null: not checked. */
  check: StatusCheck | null;
  /** --driver external: the cluster file names a command (hook) for it. */
  hook: boolean;
  /** A network fault (heal ends it); such actions stack per replica. */
  network?: boolean;
  /**
   * The name of the phases it opens, counted by name (absent: the action's own): a partition and a
   * reset open `down-N` as a kill does; `back` names the phase when it brings a cut replica back.
   */
  phaseName?: { readonly opens: string; readonly back?: string };
  /** The drivers that apply it, when not every one: the injector refuses the others up front. */
  drivers?: readonly DriverKind[];
  /** Not written in a plan file: the resolved form of one (`partition` with `link: replication`). */
  internal?: boolean;
}

/** The cluster drivers (cluster/driver.ts ClusterDriver['kind']). */
export type DriverKind = 'docker' | 'local' | 'sim' | 'external';

const UP = { states: ['up'], need: 'up and not paused' } as const;
/** Network faults stack: a replica already cut off takes another. */
const REACHABLE = { states: ['up', 'cut'], need: 'up (or only cut off by the network)' } as const;
/** Rules on loopback (cluster/net/), the simulator's model (sim/net-model.ts) or the cluster file's hooks. */
const NETWORK_DRIVERS = ['local', 'docker', 'sim', 'external'] as const;

/** Any state: a mark changes nothing, whatever the replica is. */
const ANY = {
  states: ['up', 'down', 'stopped', 'paused', 'cut'],
  need: 'in any state',
} as const satisfies FaultActionSpec['from'];

/** A network fault that slows a replica's link but leaves it healthy (K+ holds); heal ends it. */
const SLOW_LINK = {
  from: REACHABLE,
  after: 'unchanged',
  survivors: 0,
  phase: 'degraded',
  undoneBy: 'heal',
  check: null,
  hook: true,
  network: true,
  drivers: NETWORK_DRIVERS,
} as const;

const SPECS = {
  down: {
    summary: 'kill',
    fields: {},
    from: UP,
    after: 'down',
    survivors: -1,
    phase: 'down',
    undoneBy: 'rejoin',
    check: 'not-up',
    hook: true,
  },
  // Not checked: the driver's start resolves only once the server accepts connections, and a busy
  // server can miss a status query's timeout (a saturated server is not a dead one).
  rejoin: {
    summary: 'start again',
    fields: {},
    from: { states: ['down', 'stopped'], need: 'down or stopped' },
    after: 'up',
    survivors: 1,
    phase: 'recovery',
    undoneBy: null,
    check: null,
    hook: true,
  },
  stop: {
    summary: 'graceful stop',
    fields: {},
    from: UP,
    after: 'stopped',
    survivors: -1,
    phase: 'down',
    undoneBy: 'rejoin',
    check: 'not-up',
    hook: true,
  },
  pause: {
    summary: 'freeze',
    fields: {},
    from: UP,
    after: 'paused',
    survivors: -1,
    phase: 'down',
    undoneBy: 'unpause',
    check: 'paused',
    hook: true,
  },
  unpause: {
    summary: 'freeze',
    fields: {},
    from: { states: ['paused'], need: 'paused' },
    after: 'up',
    survivors: 1,
    phase: 'restored',
    undoneBy: null,
    check: 'not-paused',
    hook: true,
  },
  // Undone by itself: a run that ends throttled puts the run's quota back.
  throttle: {
    summary: 'new CPU quota',
    fields: { cpus: 'required', weight: 'optional' },
    from: { states: ['up', 'paused'], need: 'running' },
    after: 'unchanged',
    survivors: 0,
    phase: 'degraded',
    undoneBy: 'throttle',
    check: null,
    hook: true,
  },
  // Replay paused or resumed: the replica serves reads, only staler ones (lagging, not down). SQL
  // on the standby, so no hook.
  'pause-replay': {
    summary: 'WAL replay',
    fields: {},
    from: UP,
    after: 'unchanged',
    survivors: 0,
    phase: 'degraded',
    undoneBy: 'resume-replay',
    check: null,
    hook: false,
  },
  'resume-replay': {
    summary: 'WAL replay',
    fields: {},
    from: UP,
    after: 'unchanged',
    survivors: 0,
    phase: 'restored',
    undoneBy: null,
    check: null,
    hook: false,
  },
  // Network faults (iptables rules on loopback, scoped to the replica's port). A partition or a
  // reset leaves the server running but out of reach: K+ falls, as with down.
  partition: {
    summary: "drop every packet of the replica's port",
    fields: { direction: 'optional', link: 'optional' },
    from: REACHABLE,
    after: 'cut',
    survivors: -1,
    phase: 'down',
    phaseName: { opens: 'down' },
    undoneBy: 'heal',
    check: null,
    hook: true,
    network: true,
    drivers: NETWORK_DRIVERS,
  },
  reset: {
    summary: "reset every connection of the replica's port",
    fields: {},
    from: REACHABLE,
    after: 'cut',
    survivors: -1,
    phase: 'down',
    phaseName: { opens: 'down' },
    undoneBy: 'heal',
    check: null,
    hook: true,
    network: true,
    drivers: NETWORK_DRIVERS,
  },
  // Dropped packets the sender retransmits: slower, still healthy.
  loss: {
    summary: 'drop a share of the packets',
    fields: { percent: 'required' },
    ...SLOW_LINK,
  },
  // `partition` with `link: replication`: the replica's WAL stream from the primary is cut; it keeps
  // serving, staler and staler (K+ holds). A plan file writes it as a partition; `heal` with
  // `what: partition` ends it too.
  'partition-replication': {
    summary: "cut the replica's WAL stream from the primary",
    fields: { direction: 'optional' },
    from: REACHABLE,
    after: 'unchanged',
    survivors: 0,
    phase: 'degraded',
    phaseName: { opens: 'partition' },
    undoneBy: 'heal',
    check: null,
    hook: true,
    network: true,
    drivers: NETWORK_DRIVERS,
    internal: true,
  },
  // Each packet held this long (and jitter): a slow link, never a dead one.
  delay: {
    summary: "hold every packet of the replica's port",
    fields: { ms: 'required', jitter: 'optional' },
    ...SLOW_LINK,
  },
  bandwidth: {
    summary: "limit the rate of the replica's port",
    fields: { rate: 'required' },
    ...SLOW_LINK,
  },
  // The plan rules check that a heal leaves no partition or reset in force, so it always brings
  // the replica back (K+ + 1 when it was cut off; a healed loss alone changes no K+).
  heal: {
    summary: 'end network faults',
    fields: { what: 'optional' },
    from: REACHABLE,
    after: 'up',
    survivors: 1,
    phase: 'restored',
    phaseName: { opens: 'heal', back: 'rejoin' },
    undoneBy: null,
    check: null,
    hook: true,
    drivers: NETWORK_DRIVERS,
  },
  // No fault at all: a phase boundary (`mark-N`) at the plan's time, so a plan without faults (a
  // placebo) is cut into the same phases as the plan it stands in for. Every driver takes it.
  mark: {
    summary: 'nothing (a phase boundary)',
    fields: {},
    from: ANY,
    after: 'unchanged',
    survivors: 0,
    phase: 'mark',
    undoneBy: null,
    check: null,
    hook: false,
  },
} as const satisfies Record<string, FaultActionSpec>;

/** The network faults a heal ends (`what:`). */
export const NETWORK_ACTIONS = [
  'partition',
  'partition-replication',
  'reset',
  'loss',
  'delay',
  'bandwidth',
] as const;
export type NetworkAction = (typeof NETWORK_ACTIONS)[number];

export type FaultAction = keyof typeof SPECS;
/** Every action, in the order plans and messages list them. */
export const FAULT_ACTIONS = Object.keys(SPECS) as [FaultAction, ...FaultAction[]];
/** The actions a plan file writes (an internal one is the resolved form of another). */
export const FILE_FAULT_ACTIONS = FAULT_ACTIONS.filter(
  (a) => (SPECS[a] as FaultActionSpec).internal !== true,
);
/** The network faults a plan file names (`what:` of a heal, `for:`). */
export const FILE_NETWORK_ACTIONS = NETWORK_ACTIONS.filter((a) => a !== 'partition-replication');
/** The specs; typed here so that every `undoneBy` must name an action. */
export const FAULT_ACTION_SPECS: { readonly [A in FaultAction]: FaultActionSpec<FaultAction> } = SPECS;

/** The actions some other action is undone by: the injector's restore has a step for each. */
export type UndoingAction = NonNullable<(typeof SPECS)[FaultAction]['undoneBy']>;
/** The actions a cluster file has a hook for. */
export type HookAction = {
  [A in FaultAction]: (typeof SPECS)[A]['hook'] extends true ? A : never;
}[FaultAction];

/** The action that undoes `action` (its spec's `undoneBy`), typed as one that undoes another. */
export function undoingAction(action: FaultAction): UndoingAction | null {
  return SPECS[action].undoneBy;
}

/** The spec of a string read back from a file, or undefined when it names no action. */
export function faultActionSpec(action: string): FaultActionSpec<FaultAction> | undefined {
  return Object.hasOwn(SPECS, action) ? FAULT_ACTION_SPECS[action as FaultAction] : undefined;
}

/** Whether the driver applies the action (the spec's `drivers`; none named: every driver). */
export function driverApplies(action: FaultAction, driver: DriverKind): boolean {
  const drivers: readonly DriverKind[] | undefined = FAULT_ACTION_SPECS[action].drivers;
  return drivers === undefined || drivers.includes(driver);
}

/** The fields an event carries, copied from a record that may hold them (a file's event, a plan's). */
export function eventFields(ev: { readonly [F in FaultFieldName]?: unknown }): FaultFields {
  const out: Record<string, unknown> = {};
  for (const f of FAULT_FIELD_NAMES) if (ev[f] !== undefined) out[f] = ev[f];
  return out as FaultFields;
}

/** The actions that take a field (throttle for cpus). */
export function actionsTaking(field: FaultFieldName): FaultAction[] {
  return FILE_FAULT_ACTIONS.filter((a) => FAULT_ACTION_SPECS[a].fields[field] !== undefined);
}

/** `down: kill; rejoin: start again; pause/unpause: freeze; ...`: neighbours with one summary share it. */
export function actionSummaries(): string {
  const groups: { names: string[]; summary: string }[] = [];
  for (const a of FAULT_ACTIONS) {
    const { summary } = FAULT_ACTION_SPECS[a];
    const last = groups[groups.length - 1];
    if (last?.summary === summary) last.names.push(a);
    else groups.push({ names: [a], summary });
  }
  return groups.map((g) => `${g.names.join('/')}: ${g.summary}`).join('; ');
}
