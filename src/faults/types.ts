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
}
