"""Absent data files answered with data shaped by how the project's code uses them (NOTE [data shaped
by its use] in opscan/trace/run/table_stand_ins.py), synthetic files of an absent media folder and
output folders whose parents are absent (opscan/trace/run/listings.py). Each case is a small
project file run under the stand-ins, as the training command's child runs it."""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("torch")

from opscan.trace.run.stand_in_hooks import installed
from opscan.trace.run.stand_ins import SAMPLES, StandIns
from opscan.trace.run.table_stand_ins import INNER, RECORDS
from opscan.trace.sources import SourceFinder


def _run(root, code: str, call: str = "main"):
    """Write `code` as the project's loader.py and call its `call` under the stand-ins."""
    path = root / "loader.py"
    path.write_text(textwrap.dedent(code), encoding="utf-8")
    made = StandIns(str(root), SourceFinder(str(root)), str(path))
    spec = importlib.util.spec_from_file_location(f"loader_{abs(hash(str(root)))}", path)
    module = importlib.util.module_from_spec(spec)
    with installed(made):
        spec.loader.exec_module(module)
        result = getattr(module, call)()
    return result, made.replaced


@pytest.fixture()
def root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_caption_json_becomes_records_with_the_keys_the_code_reads(root):
    result, replaced = _run(root, """\
        import json, os

        def main():
            data = json.load(open('data/captions.json'))
            pairs = []
            for item in data['annotations']:
                pairs.append((int(item['image_id']), item['caption'].lower()))
            files = [os.path.join('images', data['images'][i]['file_name']) for i in range(len(data['images']))]
            return pairs, files
        """)
    pairs, files = result
    assert len(pairs) == RECORDS and isinstance(pairs[0][0], int) and isinstance(pairs[0][1], str)
    assert len(files) == RECORDS and files[0].endswith(".jpg")
    assert [(r.subject, r.path, r.line) for r in replaced] == [("data/captions.json", "loader.py", 4)]
    assert "'annotations'" in replaced[0].detail and "loader.py:" in replaced[0].detail


def test_jsonl_lines_and_formatted_keys_follow_the_code_into_its_methods(root):
    result, replaced = _run(root, """\
        import json

        class Data:
            def __init__(self):
                self.rows = []
                with open('data/train.jsonl', encoding='utf-8') as f:
                    for line in f:
                        record = json.loads(line.strip())
                        self.rows.append(self.parse(record['text'], record['label']))
                self.captions = json.load(open('data/caption.json'))

            def parse(self, text, label):
                return text.split(), float(label)

            def get(self, ix):
                return [len(c) for c in self.captions['video%i' % ix]['final_captions']]

        def main():
            data = Data()
            return data.rows, data.get(3)
        """)
    rows, captions = result
    assert len(rows) == RECORDS and isinstance(rows[0][1], float) and rows[0][0]
    assert len(captions) == INNER and all(n > 0 for n in captions)
    assert [r.subject for r in replaced] == ["data/train.jsonl", "data/caption.json"]


def test_a_whitespace_table_and_a_pickled_list_get_their_columns_and_items(root):
    result, replaced = _run(root, """\
        import pickle

        def main():
            pairs = []
            for line in open('data/ml-1m.txt'):
                user, item, rating = line.split()
                pairs.append((int(user), int(item), float(rating)))
            with open('data/smiles.pickle', 'rb') as f:
                smiles = pickle.load(f)
            kept = [s for s in smiles if len(s) <= 120]
            return pairs, kept
        """)
    pairs, kept = result
    assert len(pairs) == RECORDS and all(isinstance(v, t) for v, t in zip(pairs[0], (int, int, float)))
    assert len(kept) == RECORDS and isinstance(kept[0], str)
    assert [r.subject for r in replaced] == ["data/ml-1m.txt", "data/smiles.pickle"]
    assert "3 column(s) split on whitespace" in replaced[0].detail


def test_loadtxt_gives_a_column_or_the_table_its_indices_use(root):
    result, replaced = _run(root, """\
        import numpy as np

        def main():
            load = np.loadtxt('readings.txt', dtype=np.float32)
            table = np.loadtxt('table.csv', delimiter=',')
            return load, table[:, 4]
        """)
    load, column = result
    assert load.shape == (SAMPLES,) and load.dtype == np.float32 and column.shape == (SAMPLES,)
    assert [r.subject for r in replaced] == ["readings.txt", "table.csv"]
    assert "5 columns" in replaced[1].detail


def test_a_use_that_is_not_readable_or_the_wrong_mode_still_fails_and_real_files_are_read(root):
    (root / "data").mkdir()
    (root / "data" / "real.json").write_text('{"a": [1, 2]}', encoding="utf-8")
    result, replaced = _run(root, """\
        import json, pickle

        def opaque():
            with open('data/graphs.pkl', 'rb') as f:
                adj, x, y = pickle.load(f)

        def text_mode():
            return pickle.load(open('data/list.pkl'))['items']

        def main():
            failed = []
            for fn in (opaque, text_mode):
                try:
                    fn()
                except FileNotFoundError as exc:
                    failed.append(exc.filename)
            real = json.load(open('data/real.json'))
            return failed, real['a']
        """)
    failed, real = result
    assert failed == ["data/graphs.pkl", "data/list.pkl"] and real == [1, 2] and replaced == []


def test_a_glob_of_an_absent_image_folder_lists_files_the_image_stand_in_reads(root):
    pil = pytest.importorskip("PIL.Image")
    (root / "real").mkdir()
    (root / "real" / "a.jpg").write_bytes(b"")
    result, replaced = _run(root, """\
        import glob
        from PIL import Image

        def main():
            paths = sorted(glob.glob('/data/crowd/images/*.jpg'), key=lambda p: int(''.join(filter(str.isdigit, p))))
            maps = glob.glob('/data/crowd/gt/*.mat')
            real = glob.glob('real/*.jpg')
            return paths, maps, real, Image.open(paths[0]).size
        """)
    paths, maps, real, size = result
    assert len(paths) == 64 and maps == [] and real == ["real/a.jpg"] and size == (256, 256)
    assert pil is not None and [r.subject for r in replaced] == ["/data/crowd/images/*.jpg", "PIL.Image.open"]


def test_mkdir_of_an_output_folder_makes_its_absent_parents_inside_the_project_only(root):
    result, replaced = _run(root, """\
        import os

        def main():
            os.mkdir('runs/weights/best')
            try:
                os.mkdir('/nonexistent-root-folder/x/y')
            except FileNotFoundError:
                return 'outside refused'
        """)
    assert result == "outside refused" and os.path.isdir(root / "runs" / "weights" / "best")
    assert [r.subject for r in replaced] == ["runs/weights/best"]


def test_nothing_is_answered_without_the_stand_ins(root):
    (root / "loader.py").write_text("import json\ndef main():\n    return json.load(open('x.json'))['a']\n")
    spec = importlib.util.spec_from_file_location("plain_loader", root / "loader.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(FileNotFoundError):
        module.main()
    assert glob.glob("/data/crowd/images/*.jpg") == []


def test_an_hdf5_map_indexed_in_two_dimensions_is_a_2d_float_map(root):
    import types

    from opscan.trace.run.file_stand_ins import StoodInFile
    from opscan.trace.run.table_stand_ins import h5_dimensions

    (root / "dataset.py").write_text(textwrap.dedent("""\
        import h5py, numpy as np

        def load(path, dy, dx):
            gt_file = h5py.File(path)
            target = np.asarray(gt_file['density'])
            tokens = gt_file['ids'][:]
            return target[dy:dy + 64, dx:dx + 64], tokens
        """), encoding="utf-8")
    frame = types.SimpleNamespace(f_code=types.SimpleNamespace(co_filename=str(root / "dataset.py")), f_lineno=4)
    dims = h5_dimensions(frame)
    assert dims == {"density": 2, "ids": 1}
    stood_in = StoodInFile("gt.h5", dims)
    assert np.asarray(stood_in["density"]).ndim == 2 and np.asarray(stood_in["density"]).dtype == np.float32
    assert np.asarray(stood_in["ids"]).ndim == 1


def test_an_empty_placeholder_data_file_is_read_as_absent_and_a_file_with_content_as_it_is(root):
    (root / "data").mkdir()
    (root / "data" / "demo.train").write_text("", encoding="utf-8")
    (root / "data" / "demo.dev").write_text("hello\tworld\n", encoding="utf-8")
    (root / "data" / "empty.py").write_text("", encoding="utf-8")
    result, replaced = _run(root, """\
        def read(path):
            data = []
            with open(path, 'r', encoding='utf-8') as f:
                for line in f:
                    src, tgt = line.strip().split('\\t')[:2]
                    data.append({'src': src, 'tgt': tgt})
            return data

        def main():
            return read('data/demo.train'), read('data/demo.dev'), open('data/empty.py').read()
        """)
    train, dev, code = result
    assert len(train) == RECORDS and train[0]["src"] and dev == [{"src": "hello", "tgt": "world"}] and code == ""
    assert [r.subject for r in replaced] == ["data/demo.train"]


@pytest.mark.slow
def test_a_caption_dataset_and_a_readings_table_absent_train_a_step_and_are_named(tmp_path):
    """A captioning script's own dataset (caption JSON with formatted keys, a vocabulary JSON, an
    output folder under an absent `runs/`) and a forecasting script's `np.loadtxt` table: each takes
    its optimizer step on data shaped by its code; without the stand-ins each stops on its file."""
    from opscan.trace.run import run_script

    (tmp_path / "captions.py").write_text(textwrap.dedent("""\
        import json, os
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Captions(Dataset):
            def __init__(self):
                self.captions = json.load(open('data/caption.json'))
                info = json.load(open('data/info.json'))
                self.word_to_ix = info['word_to_ix']
                self.videos = info['videos']['train']

            def __len__(self):
                return len(self.videos)

            def __getitem__(self, ix):
                words = self.captions['video%i' % ix]['final_captions'][0]
                label = torch.zeros(8, dtype=torch.long)
                for j, w in enumerate(words[:8]):
                    label[j] = self.word_to_ix[w]
                return label

        if __name__ == '__main__':
            os.mkdir('runs/save')
            data = Captions()
            embed, head = torch.nn.Embedding(len(data.word_to_ix), 16), torch.nn.Linear(16, len(data.word_to_ix))
            optimizer = torch.optim.Adam(list(embed.parameters()) + list(head.parameters()))
            for labels in DataLoader(data, batch_size=4):
                logits = head(embed(labels))
                loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
                loss.backward()
                optimizer.step()
        """), encoding="utf-8")
    trace, _ = run_script(str(tmp_path / "captions.py"), project_root=str(tmp_path), cwd=str(tmp_path),
                          stand_ins=True, device="cpu")
    assert trace.complete and trace.steps == 1, trace.stopped_at
    assert "aten::nll_loss_forward" in {u.op for u in trace.ops}
    assert [r.subject for r in trace.replaced] == ["runs/save", "data/caption.json", "data/info.json"]
    shutil.rmtree(tmp_path / "runs")   # not contained here: the first run's folder is real
    plain, _ = run_script(str(tmp_path / "captions.py"), project_root=str(tmp_path), cwd=str(tmp_path), device="cpu")
    assert not plain.complete and "FileNotFoundError" in plain.stopped_at


def test_a_loaded_value_is_followed_into_a_class_and_a_keyword_argument_of_this_file(root):
    result, replaced = _run(root, """\
        import pickle

        class Pairs:
            def __init__(self, records, scale=1.0):
                self.items = [(r['user'], float(r['score']) * scale) for r in records]

        def build(data):
            return Pairs(data)

        def main():
            with open('data/ratings.pkl', 'rb') as f:
                loaded = pickle.load(f)
            return build(data=loaded).items
        """)
    assert len(result) == RECORDS and isinstance(result[0][1], float)
    assert "'user'" in replaced[0].detail and "'score': float" in replaced[0].detail


def test_gzip_text_lines_and_a_gzipped_pickle_are_answered_as_open_of_them(root):
    result, replaced = _run(root, """\
        import gzip, pickle

        def read(filename):
            pairs = []
            open_ = gzip.open if filename.endswith('.gz') else open
            with open_(filename, 'rt', encoding='utf-8') as f:
                for i, line in enumerate(f):
                    pair = line.strip().split('\\t')
                    if len(pair) != 2:
                        continue
                    pairs.append((pair[0].split(), pair[1].split()))
            return pairs

        def main():
            with gzip.open('data/feats.pkl.gz', 'rb') as f:
                feats = pickle.load(f)
            return read('data/cnndm.gz'), [float(v['score']) for v in feats]
        """)
    pairs, scores = result
    assert len(pairs) == RECORDS and all(pair[0] and pair[1] for pair in pairs) and len(scores) == RECORDS
    assert [r.subject for r in replaced] == ["data/feats.pkl.gz", "data/cnndm.gz"]


def _forget(monkeypatch, *names: str) -> None:
    """Modules of an earlier test's project under the same names are not this project's."""
    for name in names:
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_loading_helper_of_another_project_file_is_shaped_by_its_callers(root, monkeypatch):
    monkeypatch.syspath_prepend(str(root))   # the helper's module imported by name, as from the script's folder
    _forget(monkeypatch, "projutils", "projutils.io_utils")
    (root / "projutils").mkdir()
    (root / "projutils" / "io_utils.py").write_text(textwrap.dedent("""\
        import json

        def load_jsonl(filename):
            with open(filename) as f:
                return [json.loads(line.strip()) for line in f]

        def load_json(filename):
            with open(filename) as f:
                return json.load(f)
        """), encoding="utf-8")
    result, replaced = _run(root, """\
        from projutils.io_utils import load_json, load_jsonl

        def main():
            queries = [(q['query_id'], q['desc']) for q in load_jsonl('data/train.jsonl')]
            meta = load_json('data/video_meta.json')
            return queries, meta['duration'] + 1.0
        """)
    queries, duration = result
    assert len(queries) == RECORDS and isinstance(queries[0][1], str) and isinstance(duration, float)
    assert [(r.subject, r.path) for r in replaced] == [("data/train.jsonl", "projutils/io_utils.py"),
                                                       ("data/video_meta.json", "projutils/io_utils.py")]
    assert "loader.py:" in replaced[0].detail and "'query_id'" in replaced[0].detail


def test_a_table_read_in_binary_mode_gets_byte_lines(root):
    result, replaced = _run(root, """\
        def main():
            rows = []
            with open('data/edges.tsv', 'rb') as f:
                for line in f:
                    a, b, w = line.split(b'\\t')
                    rows.append((int(a), int(b), float(w)))
            return rows
        """)
    assert len(result) == RECORDS and isinstance(result[0][2], float)
    assert [r.subject for r in replaced] == ["data/edges.tsv"]


def test_a_table_whose_width_only_the_file_knows_is_not_made_up(root):
    """GloVe vectors: `vec = line[1:]` takes as many columns as the file has; a stand-in of some
    width would fail far away (an embedding of width 0), so the open fails at its own line."""
    result, replaced = _run(root, """\
        import numpy as np

        def main():
            try:
                with open('data/glove.6B.100d.txt', 'rb') as f:
                    for line in f:
                        line = line.split()
                        word, vec = line[0].decode('utf-8'), np.array(line[1:], dtype=np.float32)
            except FileNotFoundError as exc:
                return exc.filename
        """)
    assert result == "data/glove.6B.100d.txt" and replaced == []


def test_a_loading_helper_used_for_files_of_two_layouts_is_shaped_by_the_caller_that_ran(root, monkeypatch):
    monkeypatch.syspath_prepend(str(root))
    _forget(monkeypatch, "io_utils")
    (root / "io_utils.py").write_text(textwrap.dedent("""\
        import json

        def load_json(filename):
            with open(filename) as f:
                return json.load(f)
        """), encoding="utf-8")
    result, replaced = _run(root, """\
        from io_utils import load_json

        def main():
            queries = [q['query'] for q in load_json('data/train.json')]
            corpus = {name: float(duration) for name, duration in load_json('data/corpus.json').items()}
            return queries, corpus
        """)
    queries, corpus = result
    assert len(queries) == RECORDS and isinstance(queries[0], str)
    assert corpus and all(isinstance(v, float) for v in corpus.values())
    assert [r.subject for r in replaced] == ["data/train.json", "data/corpus.json"]


def test_values_handed_to_tensor_constructors_are_numbers_and_each_open_is_read_by_its_own_use(root):
    import torch

    # NOTE [numbers handed to a tensor]; `file` opened three times reads each by the use that follows it
    result, replaced = _run(root, """\
        import pickle
        import torch

        def main():
            file = open('processed/train', 'rb')
            train_set = pickle.load(file)
            file = open('processed/meta', 'rb')
            meta = pickle.load(file)
            file = open('processed/arrays', 'rb')
            [weights, lens] = pickle.load(file)
            batches = []
            for sample in train_set:
                for seq in sample:
                    batches.append((torch.tensor(seq[:5]), torch.tensor(seq[5:10])))
            sizes = {'user': meta['user'] + 1, 'item': meta['item'] + 1}
            return batches, sizes, torch.FloatTensor(weights), torch.LongTensor(lens)
        """)
    batches, sizes, weights, lens = result
    assert len(batches) == RECORDS * INNER and batches[0][0].dtype == torch.int64
    assert batches[0][0].shape == (5,) and batches[0][1].shape == (5,)   # seq[5:10]: 10 numbers at least
    assert all(isinstance(v, int) for v in sizes.values())
    assert weights.dtype == torch.float32 and weights.shape == (INNER,) and lens.shape == (INNER,)
    assert [r.subject for r in replaced] == ["processed/train", "processed/meta", "processed/arrays"]


def test_a_value_used_only_as_text_is_still_text_and_an_unread_one_still_fails(root):
    result, _ = _run(root, """\
        import pickle

        def main():
            with open('processed/names', 'rb') as f:
                names = pickle.load(f)
            return [n.lower() for n in names]
        """)
    assert len(result) == RECORDS and isinstance(result[0], str)
    with pytest.raises(FileNotFoundError):
        _run(root, """\
            import pickle
            import torch

            def main():
                f = open('processed/blob', 'rb')
                return torch.load(f)
            """)


def test_a_line_whose_rest_is_joined_into_a_text_is_made_up(root):
    result, replaced = _run(root, """\
        def read(path):
            with open(path, 'r') as f:
                lines = f.readlines()
            id2text = {}
            for l in [l.rstrip('\\n') for l in lines]:
                parts = l.split()
                id2text[parts[0]] = ' '.join(parts[1:])
            return id2text

        def main():
            return read('INC'), read('CORR')
        """)
    original, corrected = result
    assert original and set(original) == set(corrected) and all(isinstance(v, str) for v in original.values())
    assert [r.subject for r in replaced] == ["INC", "CORR"]


def test_a_line_whose_rest_is_a_vector_read_by_readlines_is_still_not_made_up(root):
    with pytest.raises(FileNotFoundError):   # GloVe: the vector's width is the file's
        _run(root, """\
            def main():
                with open('glove', 'r') as f:
                    lines = f.readlines()
                vectors = {}
                for l in lines:
                    parts = l.split()
                    vectors[parts[0]] = [float(x) for x in parts[1:]]
                return vectors
            """)
