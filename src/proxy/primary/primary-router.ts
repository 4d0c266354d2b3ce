/**
 * The primary listener's router: sessions go to the one server marked up (the primary the
 * follower chose, while its health checks pass; every other server is kept down). Every server
 * is of premium's role and lent to freemium, so the admission router around it (router/admission/admission.ts)
 * admits premium first and keeps the premium reserve (--admission-premium-reserve) from freemium,
 * as on a premium replica that freemium borrows.
 */
import { BaseRouter } from '../../router/base-router.js';
import type { RouterOptions } from '../../router/types.js';

export class PrimaryRouter extends BaseRouter {
  constructor(servers: readonly string[], onRoleChange?: RouterOptions['onRoleChange']) {
    super('lc', { strategy: 'lc', replicas: servers, ...(onRoleChange ? { onRoleChange } : {}) });
    for (const r of this.replicas) {
      r.role = 'premium';
      r.borrowedBy = 'freemium';
    }
  }

  protected pick(): number {
    return this.replicas.findIndex((r) => r.healthy);
  }
  protected sessionsChanged(): void {}
  protected onDown(): void {}
  protected onUp(): void {}
  protected onAdd(): void {}
}
