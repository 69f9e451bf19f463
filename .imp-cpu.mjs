const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
for (const m of process.argv.slice(2)) { const c = cpu(); const t = performance.now(); await import(m.startsWith('.') ? new URL(m, 'file://' + process.cwd() + '/').href : m); console.log(m.padEnd(40), 'cpu', (cpu() - c).toFixed(0).padStart(5), 'wall', (performance.now() - t).toFixed(0).padStart(5)); }
console.log('rss', (process.memoryUsage().rss/1048576).toFixed(1), 'total cpu', cpu().toFixed(0));
