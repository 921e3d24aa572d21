// The dashboard's PTX editor: CodeMirror 6 with a small PTX mode, line diagnostics and a change hook.
// Built into ../vendor/editor.min.js (see README.md here); exposes window.KMEditor.create().
import { EditorState } from "@codemirror/state";
import {
  EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter, drawSelection,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import {
  StreamLanguage, HighlightStyle, syntaxHighlighting, bracketMatching, indentUnit,
} from "@codemirror/language";
import { searchKeymap, highlightSelectionMatches } from "@codemirror/search";
import { setDiagnostics, lintGutter } from "@codemirror/lint";
import { tags } from "@lezer/highlight";

// PTX as a token stream: comments, directives (a dotted word that starts a statement), the
// opcode and its dotted modifiers, %registers, labels, guards, numbers (0f/0d float bit
// patterns included) and strings.
const ptxMode = {
  name: "ptx",
  startState: () => ({ comment: false, statement: true, opcode: false }),
  token(stream, state) {
    if (state.comment) {
      if (stream.skipTo("*/")) { stream.pos += 2; state.comment = false; } else stream.skipToEnd();
      return "comment";
    }
    if (stream.eatSpace()) return null;
    if (stream.match("//")) { stream.skipToEnd(); return "comment"; }
    if (stream.match("/*")) { state.comment = true; return "comment"; }
    if (stream.match(/^[;{}]/)) { state.statement = true; state.opcode = false; return "punctuation"; }
    if (stream.match(/^@!?%?[\w$]+/)) return "operator";
    if (stream.match(/^\.[A-Za-z_][\w]*/)) {
      if (state.statement) { state.statement = false; return "keyword"; }
      return "typeName";
    }
    if (stream.match(/^%[\w$.]+/)) { state.statement = false; return "variableName"; }
    if (stream.match(/^0[fF][0-9a-fA-F]{8}|^0[dD][0-9a-fA-F]{16}|^-?0[xX][0-9a-fA-F]+U?|^-?\d+(\.\d*)?([eE][+-]?\d+)?U?/)) {
      state.statement = false;
      return "number";
    }
    if (stream.match(/^"(?:[^"\\]|\\.)*"/)) return "string";
    if (stream.match(/^[$A-Za-z_][\w$]*(?=\s*:(?!:))/)) { stream.match(/^\s*:/); return "labelName"; }
    if (stream.match(/^[$A-Za-z_][\w$]*/)) {
      if (state.statement) { state.statement = false; state.opcode = true; return "keyword"; }
      return "variableName";
    }
    stream.next();
    return "punctuation";
  },
};

const ptxStyle = HighlightStyle.define([
  { tag: tags.comment, color: "#6a737d", fontStyle: "italic" },
  { tag: tags.keyword, color: "#8a3ffc", fontWeight: "600" },
  { tag: tags.typeName, color: "#0b6fb8" },
  { tag: tags.variableName, color: "#1f2328" },
  { tag: tags.number, color: "#b35900" },
  { tag: tags.string, color: "#116329" },
  { tag: tags.labelName, color: "#cf222e", fontWeight: "600" },
  { tag: tags.operator, color: "#953800" },
]);

function lineRange(doc, diagnostic) {
  const number = Math.min(Math.max(diagnostic.line || 1, 1), doc.lines);
  const line = doc.line(number);
  const column = Math.max((diagnostic.column || 1) - 1, 0);
  const from = Math.min(line.from + column, line.to);
  return { from: from === line.to ? line.from : from, to: line.to };
}

// create(parent, text, onChange) -> {view, getText, setText, mark(diagnostics)}; a diagnostic is
// {line, column, severity: "error"|"warning", message, source}.
export function create(parent, text, onChange) {
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: text,
      extensions: [
        lineNumbers(), highlightActiveLineGutter(), history(), drawSelection(), highlightActiveLine(),
        highlightSelectionMatches(), bracketMatching(), indentUnit.of("    "), lintGutter(),
        StreamLanguage.define(ptxMode), syntaxHighlighting(ptxStyle),
        keymap.of([...defaultKeymap, ...historyKeymap, ...searchKeymap, indentWithTab]),
        EditorView.updateListener.of((update) => { if (update.docChanged && onChange) onChange(); }),
        EditorView.theme({ "&": { height: "100%" }, ".cm-scroller": { fontFamily: "var(--mono)" } }),
      ],
    }),
  });
  return {
    view,
    getText: () => view.state.doc.toString(),
    setText: (value) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: value } }),
    mark(diagnostics) {
      const doc = view.state.doc;
      const marks = diagnostics.map((d) => ({
        ...lineRange(doc, d), severity: d.severity === "warning" ? "warning" : "error",
        message: d.message, source: d.source,
      }));
      view.dispatch(setDiagnostics(view.state, marks));
    },
  };
}
