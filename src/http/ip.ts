/** uWS gives the long IPv6 form ('0000:...:ffff:7f00:0001'); logs and rate-limit keys need one canonical form. */
export function normalizeIp(raw: string): string {
  if (!raw.includes(':')) return raw;
  const groups = raw.split(':');
  if (groups.length === 8 && groups.slice(0, 5).every((g) => /^0+$/.test(g)) && /^ffff$/i.test(groups[5]!)) {
    const hi = parseInt(groups[6]!, 16);
    const lo = parseInt(groups[7]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  if (groups.length !== 8) return raw.toLowerCase();
  const short = groups.map((g) => parseInt(g, 16).toString(16));
  // Compress the longest run of zero groups (RFC 5952).
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (short[i] !== '0') { i++; continue; }
    let j = i;
    while (j < 8 && short[j] === '0') j++;
    if (j - i > bestLen) { best = i; bestLen = j - i; }
    i = j;
  }
  if (best < 0) return short.join(':');
  return `${short.slice(0, best).join(':')}::${short.slice(best + bestLen).join(':')}`;
}
