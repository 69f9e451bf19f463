/**
 * Service entry point (`npm start`, `node dist/src/main.js`). Before the service's modules load, the
 * process may start itself again in place with OpenSSL tuned for this CPU (keys/openssl-reexec.ts);
 * only then is the service imported, so that first start costs a bare Node.js boot and no more.
 */
import { reexecForOpenssl } from './keys/openssl-reexec.js';

reexecForOpenssl();

import('./service.js')
  .then(({ main }) => main())
  .catch((err: unknown) => {
    process.stderr.write(`fatal: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
