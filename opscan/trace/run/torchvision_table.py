"""torchvision's datasets as their samples are (NOTE [torchvision's datasets] in torchvision_stand_ins.py):
one row per class, each with the page its numbers come from. A class not listed here is not stood in
for: it fails as it would, and the run's stop names it.

Columns: layout (how the class keeps its samples: `mnist`, `cifar`, `chw` and `folder` set the class's
own attributes; `sample` answers `__getitem__` directly), image mode (`L` grey, `RGB`), height, width,
classes, target (`class`: an int below classes; `celeba`: per `target_type`; `captions`: a list of
strings; `mask`: a grey image of class ids), and the source. Sizes of datasets whose images vary are
a typical size, marked `~` in the report (the script's transforms resize them as in a real run).
"""

from __future__ import annotations

from typing import NamedTuple

DOCS = "https://pytorch.org/vision/stable/generated/torchvision.datasets.{}.html"


class Row(NamedTuple):
    layout: str
    mode: str
    height: int
    width: int
    classes: int
    target: str
    varies: bool
    source: str


def _row(layout, mode, height, width, classes, target="class", varies=False, source="") -> Row:
    return Row(layout, mode, height, width, classes, target, varies, source)


ROWS: dict[str, Row] = {
    # the class keeps its samples in its own attributes (data_stand_ins fills them)
    "MNIST": _row("mnist", "L", 28, 28, 10, source="http://yann.lecun.com/exdb/mnist/ (28x28 grey, 10 digits)"),
    "FashionMNIST": _row("mnist", "L", 28, 28, 10, source="https://github.com/zalandoresearch/fashion-mnist"),
    "KMNIST": _row("mnist", "L", 28, 28, 10, source="https://github.com/rois-codh/kmnist"),
    "EMNIST": _row("mnist", "L", 28, 28, 62, source="https://www.nist.gov/itl/products-and-services/emnist-dataset "
                   "(byclass: 62 classes, the most of its splits)"),
    "QMNIST": _row("mnist", "L", 28, 28, 10, source="https://github.com/facebookresearch/qmnist"),
    "CIFAR10": _row("cifar", "RGB", 32, 32, 10, source="https://www.cs.toronto.edu/~kriz/cifar.html"),
    "CIFAR100": _row("cifar", "RGB", 32, 32, 100, source="https://www.cs.toronto.edu/~kriz/cifar.html"),
    "SVHN": _row("chw", "RGB", 32, 32, 10, source="http://ufldl.stanford.edu/housenumbers/ (format 2, 32x32)"),
    "STL10": _row("chw", "RGB", 96, 96, 10, source="https://cs.stanford.edu/~acoates/stl10/"),
    "ImageNet": _row("folder", "RGB", 256, 256, 1000, varies=True, source="https://www.image-net.org/ (ILSVRC 2012)"),
    "DatasetFolder": _row("folder", "RGB", 256, 256, 10, varies=True, source="an absent folder: 10 classes assumed"),
    # the class reads files in __getitem__: answered there
    "CelebA": _row("sample", "RGB", 218, 178, 40, "celeba",
                   source="https://mmlab.ie.cuhk.edu.hk/projects/CelebA.html (aligned 178x218, 40 attributes)"),
    "Caltech101": _row("sample", "RGB", 300, 300, 101, varies=True,
                       source="https://data.caltech.edu/records/mzrjq-6wc02 (about 300x200)"),
    "Caltech256": _row("sample", "RGB", 300, 300, 257, varies=True, source="https://data.caltech.edu/records/nyy15-4j048"),
    "Country211": _row("sample", "RGB", 256, 256, 211, varies=True, source=DOCS.format("Country211")),
    "DTD": _row("sample", "RGB", 300, 300, 47, varies=True, source="https://www.robots.ox.ac.uk/~vgg/data/dtd/"),
    "EuroSAT": _row("sample", "RGB", 64, 64, 10, source="https://github.com/phelber/EuroSAT (64x64 RGB)"),
    "FER2013": _row("sample", "L", 48, 48, 7, source=DOCS.format("FER2013") + " (48x48 grey, 7 emotions)"),
    "FGVCAircraft": _row("sample", "RGB", 300, 300, 100, varies=True,
                         source="https://www.robots.ox.ac.uk/~vgg/data/fgvc-aircraft/ (100 variants)"),
    "Flowers102": _row("sample", "RGB", 500, 500, 102, varies=True,
                       source="https://www.robots.ox.ac.uk/~vgg/data/flowers/102/"),
    "Food101": _row("sample", "RGB", 512, 512, 101, varies=True,
                    source="https://data.vision.ee.ethz.ch/cvl/datasets_extra/food-101/ (at most 512 a side)"),
    "GTSRB": _row("sample", "RGB", 64, 64, 43, varies=True, source="https://benchmark.ini.rub.de/gtsrb_dataset.html"),
    "Imagenette": _row("sample", "RGB", 320, 320, 10, varies=True, source="https://github.com/fastai/imagenette"),
    "INaturalist": _row("sample", "RGB", 500, 500, 10000, varies=True,
                        source="https://github.com/visipedia/inat_comp (2021: 10,000 species)"),
    "LFWPeople": _row("sample", "RGB", 250, 250, 5749, source="http://vis-www.cs.umass.edu/lfw/ (250x250)"),
    "OxfordIIITPet": _row("sample", "RGB", 500, 500, 37, varies=True,
                          source="https://www.robots.ox.ac.uk/~vgg/data/pets/"),
    "PCAM": _row("sample", "RGB", 96, 96, 2, source="https://github.com/basveeling/pcam (96x96)"),
    "Places365": _row("sample", "RGB", 256, 256, 365, source="http://places2.csail.mit.edu/ (small images: 256x256)"),
    "RenderedSST2": _row("sample", "RGB", 448, 448, 2, source=DOCS.format("RenderedSST2")),
    "SEMEION": _row("sample", "L", 16, 16, 10, source="https://archive.ics.uci.edu/dataset/178/semeion+handwritten+digit"),
    "StanfordCars": _row("sample", "RGB", 400, 400, 196, varies=True, source=DOCS.format("StanfordCars")),
    "SUN397": _row("sample", "RGB", 500, 500, 397, varies=True, source="https://vision.princeton.edu/projects/2010/SUN/"),
    "USPS": _row("sample", "L", 16, 16, 10, source=DOCS.format("USPS") + " (16x16 grey)"),
    "Omniglot": _row("sample", "L", 105, 105, 964, source="https://github.com/brendenlake/omniglot (background set)"),
    "Flickr8k": _row("sample", "RGB", 500, 500, 0, "captions", varies=True,
                     source="https://hockenmaier.cs.illinois.edu/8k-pictures.html (5 captions an image)"),
    "Flickr30k": _row("sample", "RGB", 500, 500, 0, "captions", varies=True,
                      source="https://shannon.cs.illinois.edu/DenotationGraph/ (5 captions an image)"),
    "CocoCaptions": _row("sample", "RGB", 480, 640, 0, "captions", varies=True,
                         source="https://cocodataset.org/ (5 captions an image)"),
    "VOCSegmentation": _row("sample", "RGB", 375, 500, 21, "mask", varies=True,
                            source="http://host.robots.ox.ac.uk/pascal/VOC/ (20 classes and background)"),
}
