/** Overview: the dashboard statistics and health of spec 4.7. */
import { ApiError } from '../api';
import { Badge } from '../components/badge';
import { Loader } from '../components/loader';
import { StatCards } from '../components/props';
import { t } from '../i18n';
import { useAsync, useServices } from '../services';

interface Stats {
  users: { total?: number; error?: string };
  clients: { total?: number; error?: string };
  sessions: { active?: number; total?: number; error?: string } | number;
  grants: { active?: number; total?: number; error?: string } | number;
  activity: Record<string, number | string>;
}
interface Health {
  status: string;
  checks: Record<string, { status: string }>;
  timestamp: string;
}

function num(v: unknown): string {
  if (typeof v === 'number') return String(v);
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o.error === 'string') return t('unavailable');
    const n = o.total ?? o.active ?? o.count;
    return typeof n === 'number' ? String(n) : '—';
  }
  return '—';
}

export function Overview() {
  const { api } = useServices();
  const stats = useAsync(() => api.get<{ data: Stats }>('/api/v1/stats'), 'stats');
  // A degraded service answers 503 with the same body: show it rather than an error.
  const health = useAsync(async () => {
    try {
      return (await api.get<{ data: Health }>('/api/v1/stats/health')).data;
    } catch (err) {
      if (err instanceof ApiError && err.status === 503) return { status: 'degraded', checks: {}, timestamp: '' } as Health;
      throw err;
    }
  }, 'health');
  return (
    <>
      <h1>{t('nav.overview')}</h1>
      <section aria-labelledby="stats-h">
        <h2 id="stats-h">{t('overview.stats')}</h2>
        <Loader state={stats}>
          {({ data }) => (
            <StatCards
              items={[
                [t('nav.users'), num(data.users)],
                [t('nav.clients'), num(data.clients)],
                [t('nav.sessions'), num(data.sessions)],
                [t('overview.grants'), num(data.grants)],
                ...Object.entries(data.activity ?? {})
                  .filter(([, v]) => typeof v === 'number')
                  .map(([k, v]): [string, string] => [t(`activity.${k}`), String(v)]),
              ]}
            />
          )}
        </Loader>
      </section>
      <section aria-labelledby="health-h">
        <h2 id="health-h">{t('overview.health')}</h2>
        <Loader state={health}>
          {(h) => (
            <>
              <p>
                {t('overview.status')}: <strong class={`badge ${h.status === 'healthy' ? 'ok' : 'bad'}`}>{h.status}</strong>
              </p>
              <ul class="checks">
                {Object.entries(h.checks).map(([name, c]) => (
                  <li key={name}>
                    {name}: <Badge tone={c.status === 'healthy' ? 'ok' : 'bad'}>{c.status}</Badge>
                  </li>
                ))}
              </ul>
            </>
          )}
        </Loader>
      </section>
    </>
  );
}
