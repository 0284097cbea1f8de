// Parses PowerShell scripts with the tree-sitter PowerShell grammar and
// checks two rules hybridctl's rendered Windows scripts keep.
//
// Input on stdin: JSON [{"name": "...", "text": "..."}]. Output, one line
// per finding: NAME:LINE:COL: KIND: message, where KIND is "syntax error"
// or a rule name:
//   native-under-stop     a native program called by name where the last
//                         $ErrorActionPreference set before it, in the
//                         nearest enclosing block that sets one, is 'Stop'
//                         (a setting inside an earlier function or script
//                         block is that block's own and does not count)
//                         (Windows PowerShell 5.1 makes its stderr lines
//                         fatal when redirected; a 2>&1 does not help)
//   strict-null-property  a property read on (a lookup with -ErrorAction
//                         SilentlyContinue or Ignore) in a script under
//                         Set-StrictMode: it throws when nothing is found
// Exit 0 when it ran (findings or not), 2 when it could not.
//
// Run it with node --liftoff-only: V8's optimizing tiers take minutes on
// the 1 MB grammar.
'use strict';
const { Parser, Language } = require('web-tree-sitter');

const NATIVE = /^(.*\.exe|tar|curl|w32tm|icacls|sc|nssm|dism|kubeadm|kubelet|crictl|containerd|netsh|reg|schtasks|hnsdiag|powershell|pwsh)$/i;

function findings(name, text, tree) {
  const out = [];
  const at = (n, kind, msg) => out.push(`${name}:${n.startPosition.row + 1}:${n.startPosition.column + 1}: ${kind}: ${msg}`);
  const strict = /Set-StrictMode/i.test(text);
  // underStop: the last $ErrorActionPreference assignment before n in its
  // nearest enclosing block (script block, function, script) that has one
  // is 'Stop'. Assignments inside other blocks that end before n (an
  // earlier function's body, a ForEach-Object block) are their own scope's
  // and do not count.
  const BLOCKS = ['script_block', 'function_statement', 'program'];
  const underStop = (n) => {
    for (let p = n.parent; p; p = p.parent) {
      if (!BLOCKS.includes(p.type)) continue;
      const chars = text.slice(p.startIndex, n.startIndex).split('');
      const mask = (c) => {
        for (let i = 0; i < c.childCount; i++) {
          const k = c.child(i);
          if (k.startIndex >= n.startIndex) break;
          if (BLOCKS.includes(k.type) && k.endIndex <= n.startIndex) {
            for (let j = k.startIndex; j < k.endIndex; j++) chars[j - p.startIndex] = ' ';
          } else {
            mask(k);
          }
        }
      };
      mask(p);
      let last = null;
      for (const m of chars.join('').matchAll(/\$ErrorActionPreference\s*=\s*'(\w+)'/gi)) last = m[1];
      if (last !== null) return last.toLowerCase() === 'stop';
    }
    return false;
  };
  const walk = (n) => {
    if (n.isError || n.isMissing) {
      at(n, 'syntax error', n.isMissing ? `missing ${n.type}` : `unexpected ${JSON.stringify(n.text.slice(0, 40))}`);
      if (n.isError) return; // its children are part of the same error
    }
    if (n.type === 'command') {
      const cn = n.childForFieldName('command_name');
      if (cn && cn.type === 'command_name' && NATIVE.test(cn.text) && underStop(n)) {
        at(n, 'native-under-stop', `${cn.text} runs under 'Stop': its stderr would end the script; run it through Invoke-Native`);
      }
    }
    if (n.type === 'member_access' && strict) {
      const obj = n.namedChild(0);
      if (obj && obj.type === 'parenthesized_expression' && /-ErrorAction\s+(SilentlyContinue|Ignore)\b/i.test(obj.text)) {
        at(n, 'strict-null-property', `property read on a lookup that may return nothing: ${JSON.stringify(n.text.slice(0, 60))}; keep it in a variable and test it first`);
      }
    }
    for (let i = 0; i < n.childCount; i++) walk(n.child(i));
  };
  walk(tree.rootNode);
  return out;
}

(async () => {
  let input = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) input += chunk;
  const scripts = JSON.parse(input);
  await Parser.init();
  const lang = await Language.load(require.resolve('tree-sitter-powershell/tree-sitter-powershell.wasm'));
  const parser = new Parser();
  parser.setLanguage(lang);
  const lines = [];
  for (const s of scripts) {
    // The BOM and CRLF of rendered scripts are what Windows reads; the
    // grammar wants neither.
    const text = s.text.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
    const tree = parser.parse(text);
    lines.push(...findings(s.name, text, tree));
    tree.delete();
  }
  process.stdout.write(lines.map((l) => l + '\n').join(''));
})().catch((e) => {
  process.stderr.write(`parse.cjs: ${(e && e.stack) || e}\n`);
  process.exit(2);
});
