/** The client's logo_uri on pages (issue 18, item 17): only https or a data: image, escaped, CSP origin only. */
import { describe, expect, it } from 'vitest';
import { clientLogo, logoImgSources, safeLogoUri } from '../../src/ui/client-logo.js';
import { translator } from '../../src/ui/i18n/index.js';
import type { PageUi } from '../../src/ui/page-ui.js';

const ui: PageUi = { stylesheet: '/s.css', t: translator('en'), languages: [] };

describe('client logo', () => {
  it('shows https logos and data: images, nothing else', () => {
    expect(safeLogoUri('https://cdn.example.com/logo.png')).toBe('https://cdn.example.com/logo.png');
    expect(safeLogoUri('data:image/png;base64,iVBORw0KGgo=')).toBe('data:image/png;base64,iVBORw0KGgo=');
    for (const bad of ['http://cdn.example.com/logo.png', 'javascript:alert(1)', 'data:text/html;base64,PHNjcmlwdD4=', 'data:image/png,<svg onload=x>', 'file:///etc/passwd', 'https://user:pw@cdn.example.com/l.png', '//cdn.example.com/l.png', 42, undefined]) {
      expect(safeLogoUri(bad), String(bad)).toBeUndefined();
      expect(clientLogo(ui, bad, 'Shop').value).toBe('');
    }
  });

  it('names only the https origin for CSP img-src', () => {
    expect(logoImgSources('https://cdn.example.com:8443/a/logo.png?x=1')).toEqual(['https://cdn.example.com:8443']);
    expect(logoImgSources('data:image/png;base64,AAAA')).toEqual([]);
    expect(logoImgSources('http://cdn.example.com/logo.png')).toEqual([]);
  });

  it('escapes the address and the alt text', () => {
    const out = clientLogo(ui, 'https://cdn.example.com/a.png?"><script>', '<b>"Shop"</b>').value;
    expect(out).not.toContain('<script>');
    expect(out).not.toContain('<b>');
    expect(out).toContain('alt="Logo of &lt;b&gt;&quot;Shop&quot;&lt;/b&gt;"');
  });
});
