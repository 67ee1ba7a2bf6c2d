/**
 * Hostile bodies and names against the files sent with forms (issue 32): the streamed multipart
 * parser, the labels, the spool and the export, each a rule that must hold whatever a sender does.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readMultipartStream, type StreamLimits } from "../../lib/files/multipart_stream.ts";
import { DEFAULT_ATTACHMENT_TYPES, type FileKind } from "../../lib/files/sniff.ts";
import { openSpool, type Spool } from "../../lib/files/spool.ts";
import { withSpool } from "../support/temp_spool.ts";
import { chunked } from "../support/chunked.ts";
import { copyOut, recordFiles } from "../../lib/files/export_files.ts";
import { type DocumentExtra, sendDocument } from "../../lib/bot/document.ts";

const LIMITS: StreamLimits = {
  fileBytes: 1_000_000,
  textBytes: 16_384,
  kinds: new Set<FileKind>(DEFAULT_ATTACHMENT_TYPES),
  maxParts: 1000,
};

const encoder = new TextEncoder();
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** One file part with a hand-made `Content-Disposition`, boundary `b`. */
function filePart(disposition: string, content: string): string {
  return `--b\r\nContent-Disposition: form-data; ${disposition}\r\n\r\n${content}\r\n`;
}

const TYPE = "multipart/form-data; boundary=b";

async function listed(dir: string): Promise<string[]> {
  return (await Array.fromAsync(Deno.readDir(dir))).map((entry) => entry.name).sort();
}

async function namesOf(spool: Spool, body: string): Promise<string[]> {
  const result = await readMultipartStream(chunked(body, 7), TYPE, LIMITS, { spool, prefix: "n" });
  assert.equal(result.kind, "parsed", JSON.stringify(result));
  if (result.kind !== "parsed") return [];
  await Promise.all(result.files.map((file) => spool.remove(file.stored)));
  return result.files.map((file) => file.name);
}

Deno.test("a file's label ends with an extension of the kind its content was sniffed as (a text file named .bat, .html or .jar is not one)", async () => {
  await withSpool(async (spool) => {
    const names = await namesOf(
      spool,
      filePart(`name="a"; filename="CV.pdf.bat"`, "calc.exe") +
        filePart(`name="b"; filename="page.html"`, "hello <script>alert(1)</script>") +
        filePart(`name="c"; filename="run.cmd . ."`, "del /q *") +
        filePart(`name="d"; filename="app.jar"`, "%PDF-1.7\nnot really a jar") +
        filePart(`name="e"; filename="CV.PDF"`, "%PDF-1.7\n") +
        filePart(`name="f"; filename="notes.txt"`, "plain words") +
        filePart(`name="g"; filename=""`, "%PDF-1.7\n") +
        "--b--\r\n",
    );
    assert.deepEqual(names, [
      "CV.pdf.bat.txt",
      "page.html.txt",
      "run.cmd.txt",
      "app.jar.pdf",
      "CV.PDF",
      "notes.txt",
      "file.pdf",
    ]);
  });
});

Deno.test("a file's label fits a file name on disk, so export --files writes a file sent with 120 emoji in its name", async () => {
  await withSpool(async (spool, dir) => {
    const content = encoder.encode("%PDF-1.7\n" + "x".repeat(1000));
    const name = "😀".repeat(120) + ".pdf";
    const body = encoder.encode(
      `--b\r\nContent-Disposition: form-data; name="f"; filename="${name}"\r\n\r\n`,
    );
    const whole = new Uint8Array([...body, ...content, ...encoder.encode("\r\n--b--\r\n")]);
    const result = await readMultipartStream(chunked(whole, 100), TYPE, LIMITS, {
      spool,
      prefix: "e",
    });
    assert.equal(result.kind, "parsed");
    if (result.kind !== "parsed") return;
    const [file] = result.files;
    assert.ok(encoder.encode(file!.name).length <= 160, file!.name);
    assert.ok(file!.name.endsWith(".pdf"));
    await spool.rename(file!.stored, "k3x9q2ab-0");
    const out = `${dir}/../out`;
    await Deno.mkdir(out);
    const record = { id: "k3x9q2ab", files: [{ name: file!.name, sha256: file!.sha256 }] };
    const counts = await copyOut(dir, out, recordFiles(record));
    assert.deepEqual(counts, { copied: 1, missing: 0, damaged: 0 });
    const [written] = await listed(out);
    assert.equal(sha256(await Deno.readFile(`${out}/${written}`)), sha256(content));
  });
});

Deno.test("a submission brings at most 20 files: a body of 300 one-byte files is refused with nothing kept", async () => {
  await withSpool(async (spool, dir) => {
    let body = "";
    for (let i = 0; i < 300; i++) {
      body += `--b\r\nContent-Disposition:;name=a;filename=b\r\n\r\nx\r\n`;
    }
    body += "--b--";
    const result = await readMultipartStream(chunked(body, 4096), TYPE, LIMITS, {
      spool,
      prefix: "m",
    });
    assert.deepEqual(result, { kind: "too_large", what: "count" });
    assert.deepEqual(await listed(dir), []);
    // Twenty are taken.
    let twenty = "";
    for (let i = 0; i < 20; i++) twenty += filePart(`name="a"; filename="${i}.txt"`, "x");
    const taken = await readMultipartStream(chunked(twenty + "--b--", 7), TYPE, LIMITS, {
      spool,
      prefix: "t",
    });
    assert.equal(taken.kind === "parsed" && taken.files.length, 20);
  });
});

Deno.test("nothing is kept when a body fails after its files were written: a long epilogue, no final boundary, a later file refused, a header block that never ends", async () => {
  await withSpool(async (spool, dir) => {
    const first = filePart(`name="a"; filename="a.pdf"`, "%PDF-1.7\n" + "p".repeat(3000));
    const bodies = [
      first + "--b--\r\n" + "e".repeat(20_000),
      first + '--b\r\nContent-Disposition: form-data; name="m"\r\n\r\nno end',
      first + filePart(`name="z"; filename="z.pdf"`, "MZ\x90\x00 a program"),
      first + '--b\r\nContent-Disposition: form-data; name="h"; x="' + "h".repeat(20_000),
    ];
    for (const [i, body] of bodies.entries()) {
      const result = await readMultipartStream(chunked(body, 512), TYPE, LIMITS, {
        spool,
        prefix: `f${i}`,
      });
      assert.notEqual(result.kind, "parsed", `body ${i}`);
      assert.deepEqual(await listed(dir), [], `body ${i}`);
    }
  });
});

Deno.test("the boundary inside a file's content ends the part only after CRLF: a file holding --b whole is kept byte for byte", async () => {
  await withSpool(async (spool) => {
    const content = "%PDF-1.7\n--b\n--b--\r--b\n\n--b\r\n-b--" + "\r\n-".repeat(500) + "x--b";
    const body = filePart(`name="a"; filename="a.pdf"`, content) + "--b--\r\n";
    for (const size of [1, 3, 64]) {
      const result = await readMultipartStream(chunked(body, size), TYPE, LIMITS, {
        spool,
        prefix: `c${size}`,
      });
      assert.equal(result.kind, "parsed");
      if (result.kind !== "parsed") return;
      assert.equal(result.files[0]!.sha256, sha256(encoder.encode(content)));
      await spool.remove(result.files[0]!.stored);
    }
  });
});

Deno.test("a link planted at a spool name is never written through, and the file it points to is untouched", async () => {
  await withSpool(async (spool, dir) => {
    const victim = `${dir}/../victim`;
    await Deno.writeTextFile(victim, "precious");
    await Deno.symlink(victim, `${dir}/p-0`);
    const body = filePart(`name="a"; filename="a.pdf"`, "%PDF-1.7\nattacker") + "--b--\r\n";
    await assert.rejects(
      readMultipartStream(chunked(body, 7), TYPE, LIMITS, { spool, prefix: "p" }),
      Deno.errors.AlreadyExists,
    );
    assert.equal(await Deno.readTextFile(victim), "precious");
  });
});

Deno.test("a link or a file planted at MESSAGES_FILE.files is refused, never followed", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/elsewhere`);
    await Deno.symlink(`${dir}/elsewhere`, `${dir}/m.files`);
    await assert.rejects(openSpool(`${dir}/m.files`), /not a directory/);
    await Deno.writeTextFile(`${dir}/n.files`, "");
    await assert.rejects(openSpool(`${dir}/n.files`), /not a directory/);
    await Deno.mkdir(`${dir}/o.files`, { mode: 0o777 });
    await Deno.chmod(`${dir}/o.files`, 0o777);
    await openSpool(`${dir}/o.files`);
    assert.equal((await Deno.stat(`${dir}/o.files`)).mode! & 0o777, 0o700);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a document of a notification sent silently (marked as spam) is sent silently too", {
  // Found by attack: the documents of a spam-marked submission rang the owner's phone. The
  // `files` rows keep `silent` (set at acceptance), DocumentSender passes it, sendDocument sends it.
}, async () => {
  let body = "";
  const fetchStub: typeof fetch = async (_url, init) => {
    body = await new Response(init!.body as BodyInit).text();
    return Response.json({ ok: true, result: { message_id: 9 } });
  };
  const upload = {
    name: "a.pdf",
    type: "application/pdf",
    size: 9,
    open: () => chunked("%PDF-1.7\n", 7),
  };
  const extra = { replyTo: 5, silent: true } as DocumentExtra;
  await sendDocument(
    { apiUrl: "http://127.0.0.1:9", token: "1:x", timeoutMs: 1000, fetch: fetchStub },
    -100,
    upload,
    extra,
  );
  assert.match(body, /name="disable_notification"\r\n\r\ntrue/);
});

Deno.test("filename* (RFC 5987) is only a label too, duplicate fields keep every file, and a text field after the files is kept", async () => {
  await withSpool(async (spool, dir) => {
    const body = filePart(
      `name="cv"; filename="plain.txt"; filename*=UTF-8''..%2F..%2Fetc%2F%E2%80%AEtxt.exe`,
      "one",
    ) +
      filePart(`name="cv"; filename="a\\b/c:d.txt"`, "two") +
      `--b\r\nContent-Disposition: form-data; name="message"\r\n\r\nafter the files\r\n--b--\r\n`;
    const result = await readMultipartStream(chunked(body, 7), TYPE, LIMITS, {
      spool,
      prefix: "r",
    });
    assert.equal(result.kind, "parsed");
    if (result.kind !== "parsed") return;
    assert.deepEqual(result.files.map((file) => [file.field, file.name]), [
      ["cv", "txt.exe.txt"],
      ["cv", "c:d.txt"],
    ]);
    assert.deepEqual(result.pairs, [["message", "after the files"]]);
    assert.deepEqual(await listed(dir), ["r-0", "r-1"]);
  });
});

Deno.test("thousands of empty file inputs, or a flood of tiny parts, end at the text budget with nothing kept", async () => {
  await withSpool(async (spool, dir) => {
    const empty = `--b\r\nContent-Disposition: form-data; name="f"; filename=""\r\n\r\n\r\n`;
    for (const body of [empty.repeat(3000) + "--b--", "--b\r\n".repeat(20_000)]) {
      const result = await readMultipartStream(chunked(body, 8192), TYPE, LIMITS, {
        spool,
        prefix: "x",
      });
      assert.notEqual(result.kind, "parsed");
      assert.deepEqual(await listed(dir), []);
    }
  });
});
