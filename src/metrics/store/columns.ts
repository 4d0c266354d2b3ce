type Typed = Float64Array | Float32Array | Uint16Array | Uint8Array;

/** A growable typed array: a few bytes per query instead of an object, so a long run stays small. */
export class Column<T extends Typed> {
  private buf: T;
  length = 0;
  /** Every value so far >= the one before (no NaN): a time column then takes lowerBound(). */
  ascending = true;

  constructor(private readonly make: (n: number) => T) {
    this.buf = make(1024);
  }

  push(v: number): void {
    if (this.length === this.buf.length) {
      const next = this.make(this.buf.length * 2);
      next.set(this.buf as never);
      this.buf = next;
    }
    if (this.length > 0 && !(v >= (this.buf[this.length - 1] as number))) this.ascending = false;
    else if (Number.isNaN(v)) this.ascending = false;
    this.buf[this.length++] = v;
  }

  /**
   * The first index whose value is >= v (length when none), for an ascending column; 0 for any
   * other, so a scan from it still sees every value.
   */
  lowerBound(v: number): number {
    if (!this.ascending) return 0;
    let lo = 0;
    let hi = this.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.buf[mid] as number) < v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Like lowerBound, the index past the last value < v; length for a column not ascending. */
  upperLimit(v: number): number {
    return this.ascending ? this.lowerBound(v) : this.length;
  }

  get(i: number): number {
    return this.buf[i] ?? Number.NaN;
  }
}

export const f64 = (): Column<Float64Array> => new Column((n) => new Float64Array(n));
export const f32 = (): Column<Float32Array> => new Column((n) => new Float32Array(n));
export const u8 = (): Column<Uint8Array> => new Column((n) => new Uint8Array(n));
export const u16 = (): Column<Uint16Array> => new Column((n) => new Uint16Array(n));
