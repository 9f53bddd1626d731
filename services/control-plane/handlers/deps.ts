import type { Database } from '../../store/db.js';
import type { ControlPlaneSource } from '../decision/source.js';
import type { WatchHub } from '../watch/hub.js';
import type { KeyGuard } from '../watch/key-guard.js';

/** What every handler needs; passed down explicitly from start-up. */
export interface Deps {
  /** The store: handlers read and write it through its modules (services/store), never by SQL. */
  db: Database;
  /** Where DecisionService answers from (the tenants' change-log followers). */
  decision: ControlPlaneSource;
  /** The Watch streams (SnapshotService); absent where no server streams (in-process test apps). */
  watch?: WatchHub;
  /** Ends Watch streams whose key is revoked or expires while they are open. */
  watchKeys?: KeyGuard;
}
