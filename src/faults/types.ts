/** A fault plan as parsed and validated (times in seconds from the start of the run). */
export type FaultAction =
  | 'down'
  | 'rejoin'
  | 'stop'
  | 'pause'
  | 'unpause'
  | 'throttle'
  | 'pause-replay'
  | 'resume-replay';

export interface FaultEvent {
  /** Seconds from the start of the run (warm-up included). */
  at: number;
  /** 'r1'..'rK' */
  replica: string;
  action: FaultAction;
  /** For throttle: the new CPU quota (cores). */
  cpus?: number;
  /** For throttle: the replica's new static weight (absent: unchanged). */
  weight?: number;
  /** The zone of a `zone-down`/`zone-up` this event was expanded from. */
  zone?: string;
  /** 1-based line of the event in the plan file (0 when built in code). */
  line: number;
}

export interface FaultPlan {
  name: string;
  description: string;
  /** Total run length, seconds. */
  duration: number;
  /** Seconds at the start excluded from every phase (ramp-up). */
  warmup: number;
  /** Length of the `ref` phase just before the first fault, seconds (default 30). */
  referenceWindow: number;
  /** Replicas the plan expects (K); events must name r1..rK. Default 5. */
  replicas: number;
  /** In time order; events at one time keep the order written. */
  events: FaultEvent[];
  /** Static weight per replica (relative capacity, default 1); `--weights` overrides. */
  weights?: Record<string, number>;
  /** CPU quota per replica (cores) set before the run; unlisted replicas keep the cluster's. */
  cpus?: Record<string, number>;
  /** Zone per replica: every replica or none (no zone preference). */
  zones?: Record<string, string>;
}
