"""The frozen retrieval questions stay exactly as their outside writers left them.

`bench/retrieval/data/frozen/` holds 111 questions, `frozen-2/` 98, `frozen-3/` 84, `frozen-4/` 96, `frozen-5/` 95,
`frozen-6/` 107, `frozen-7/` 108, `frozen-8/` 107, `frozen-9/` 107, `frozen-10/` 106, `frozen-11/` 108,
`frozen-12/` 94, `frozen-13/` 106, `frozen-14/` 107, `frozen-15/` 107, `frozen-16/` 106, `frozen-17/` 66 and
`frozen-18/` 66 (commit histories only), each set written by two outside writers that saw only their prompt
(`WRITER_PROMPT.md`) and the documents they chose, committed before the set's first run. They only report until
that run: a ranking change is chosen on other questions. If one of these files changes, the set no longer measures
what nobody here tuned on, and this test says so.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from .support import REPO

FROZEN = REPO / "bench" / "retrieval" / "data" / "frozen"
SHA256 = {
    "WRITER_PROMPT.md": "f051027b8cd66499308fc4e01d13ba980451d1dd12d01f6d752266f619cbee93",
    "qa-a.jsonl": "9b0a5b263bd6bb1f3ab47911e602556f00fb32fd50422ac9690bd23f9d11a308",
    "qa-b.jsonl": "1abe192204f27eeae1d5a714a8c26cfae1684eb302e3bb8ad10b92fdfe00263d",
    "docs/code_configparser.py": "4a70cecccb55031a413b79e6ced2e63ca031f770cd25a4882980ecdeab67f6ff",
    "docs/code_ws_websocket.js": "5ae09f773299ad39aad65a7ae6aa6a51fd6bae1d8fe1f1255152439ae50975e8",
    "docs/json_sam_policy_templates.json": "3da6e0e839d44360b0f68d0d15f5962e709099e7b398f035a062e82c9f27ed89",
    "docs/json_scheduler_api.json": "428fbc6d766436e7b5394010e98987af0c738980ccab60d541dd5e5720e643e1",
    "docs/logs_pip_install_verbose-b.log": "949de68eab916bb5ddd8afab942bd85919deaa45a3d39c0ddc8aa37a815289c5",
    "docs/logs_pytest_jinja2-b.log": "d43ac0960419ba2d398b8023a1c7eb286a0bf6c6c54aed2917ae4fa1209f274d",
    "docs/markdown_axios_readme-b.md": "d5365d4786b490f1ec68425ddab575ca646c08e4f94834d5156dbb9653e98c37",
    "docs/markdown_node_zlib-b.md": "a9065b7722dedc3f848fb654bb430a01e879991a6f771c6bac3f77c7126b1e6e",
    "docs/prose_gpl3-b.txt": "3972dc9744f6499f0f9b2dbf76696f2ae7ad8af9b23dde66d6af86c9dfb36986",
    "docs/prose_jinja2_templates-b.rst": "dc180165969ba92e85273ba648c1626abf978ccc25eb4357ccec7d37f2bd6941",
}


FROZEN_2 = REPO / "bench" / "retrieval" / "data" / "frozen-2"
SHA256_2 = {
    "WRITER_PROMPT.md": "f785deea810d38550abc9bb755149e62e9a7cfa69c590a9b910cc5713ca84afc",
    "qa-a.jsonl": "e1271bd339a2a73e371ef8255824ce6ef0e600484c1562b49d3ac5808bf9b51a",
    "qa-b.jsonl": "3451f17210ee4822fdab7a3be8113b67d681b59e50f971fbd69cfa717d0c3cb9",
    "docs/code_ejs-a.js": "a7ca2bcea4de5e97301632ee774edd69625896f40f06386a6e1a97c668a0e176",
    "docs/code_ftplib-a.py": "672300f448249dfd7825369e47111c37b8aa5355ef0a10df3226bd5f849e538e",
    "docs/json_lambda-examples-a.json": "fd3397a6d4d56541644b1ae46aafc9a4828bc5462345c2bf4e90bfd22b461cb8",
    "docs/json_swagger2-schema-a.json": "cdf5228ea367bc85bd2be4f60f2ef4cb3da278a57fd713b49f84bdf5219cdcf3",
    "docs/logs_npm-install-express-b.log": "2cfd7a692ab46639d80945e736b996c905b3af2b6bc5aa1fb0f5601ca3cc1068",
    "docs/logs_pytest-more-itertools-b.log": "54beb19f51bb74f14d17b0b818597426cfd86a4531118d9df2b2cb2003fe5e1c",
    "docs/markdown_node-net-b.md": "febe6ecc958d8a6cb07f42dcb50b1f88d97869809e9f061df47744c4715dac65",
    "docs/markdown_pyenv-readme-b.md": "fa23cc674e1b76154bae3da64851c7a60711beaf66a29231d3914855f7bca1c5",
    "docs/prose_pytest-fixtures-b.rst": "74af80f0c53b048db66630bc80e49128406e4f88714a3345ae5383d30d128000",
    "docs/prose_vim-channel-b.txt": "9c4c070c6ad4b8ce55b70afe63157017142b8e3dbdf05ef5fe1f971a6c4589ee",
}
FROZEN_3 = REPO / "bench" / "retrieval" / "data" / "frozen-3"
SHA256_3 = {
    "WRITER_PROMPT.md": "ad10b980bc7d85b5b966365f9c4180c3c937ace9c9e1e1a4d15a886805881c3a",
    "qa-C.jsonl": "a50418749bc11363ad01f05c45705add875b152842d6d070861a62d1467ff740",
    "qa-D.jsonl": "ff78110eade49c4ba0f2cb1af53723323f79cadb68ced38e6dc212d7a2ca8410",
    "docs/code_cryptography-x509-certificate-D.rs": "fb82671783709ca39469d3b5a49b967592b750e51b99cf4456c9320db7a6776e",
    "docs/commits_pyenv-virtualenv-C.txt": "f7ac5279bcf532204e6e9d419f86465c5f57ca20607c9d564723480d357f2ef2",
    "docs/json_npm-ls-all-C.json": "bfe174256d1be3bab51f0d1a99c63447bd7683fc071447441891b1178a45b084",
    "docs/logs_apt-history-D.log": "62618cfe3878a810dc75cc357c069e2067d87be52475e374dda250a9dfd5f093",
    "docs/page_sqlalchemy-sqlite-dialect-D.txt": "63c4f35fa7ddee65c3b733fbd184aae3729fb503ba3e1f03dcf6aadca30afdb2",
    "docs/table_dpkg-packages-C.tsv": "4086fbdf9153ad61eee3802c2c612ee73f702bbda76c323e577c0f1dd4fea5f1",
    "docs/table_ls-usr-bin-C.txt": "7b2e650700e0d7389d757072b2695f35dbb76472a316a1917cc1ab7fe11ef7d4",
    "docs/tests_markdown-unittest-D.txt": "2fd2572ba58e295fdeae2ec2de581971d1a4f1e42824d958e9209648225e9123",
}

FROZEN_4 = REPO / "bench" / "retrieval" / "data" / "frozen-4"
SHA256_4 = {
    "WRITER_PROMPT.md": "78550e7c8ae8ca69764686c595fb3c1215294bdabe73b5880e79ca457b034fed",
    "qa-E.jsonl": "6183bbd9869d3a2896b204a48bb2d95a9212bdb35a99740afe88e89646cfa7a5",
    "qa-F.jsonl": "a7ed5a73d0eb062969d185a627e63fdf7df40f67f6eb67c12af14fd395ec7bc7",
    "docs/code_rustworkx-core-dag-algo-F.rs": "1c10dfc11eb9c0055979e7e56e8823988f31f67b84714dc4cca15ac6f9cd7463",
    "docs/commits_itsdangerous-E.txt": "4d462489ca68b383faaf6c40a4fc413913f31f7ade75f825d3aec72a246a063e",
    "docs/json_pip-inspect-httpx-venv-E.json": "2ea79d6151a7ae2ac1df0052e8197f1ae62a88d434baf9f620e33961292bbb02",
    "docs/logs_npm-install-jest-F.log": "61a8ee4d10112f0958b9fe8d07d7915e5687075f91d6d5022f1f17703113c753",
    "docs/page_mako-usage-F.txt": "e504d47fb6490946fc75381d7ca15b1a439dda89f889ec34371c1e0e9fe04255",
    "docs/table_ls-l-usr-lib-x86_64-linux-gnu-F.txt": (
        "1abc46d35f545c4f41210b54ef79eb523bfe69b3ebb4271385eaaaa2dacae3c4"
    ),
    "docs/table_us-airports-E.csv": "18394e761496d43fdabc14e2adbfa6d5ff489dba9612e66b4ba670f75d0bb94b",
    "docs/tests_cachetools-pytest-E.txt": "8a39df6b2e0247ee548e5af1e50312dc80c1f16fa0f463f55ff67124e11cd7ba",
}

FROZEN_5 = REPO / "bench" / "retrieval" / "data" / "frozen-5"
SHA256_5 = {
    "WRITER_PROMPT.md": "46650b779649fc6f4a76d7caf824d5b3f6821e50ef3a5023fe6e4e395eb66216",
    "qa-G.jsonl": "b53e0ff5f6b1668b2aadfc15d7410ac3a255d20b8887e1047b365e387567de39",
    "qa-H.jsonl": "2ccf4fecaf0ac4a9001e1d777c69aeff47f8a4a0867ebfff8bf3d39650cf3220",
    "docs/code_qiskit-qasm2-lex-H.rs": "ab32a922bed2a885db214ec806bd6ae03da9c70e6bb5cd041e9e20686fcbd6de",
    "docs/commits_humanize-G.txt": "229cd63ae0579c3ce4e4ee6e394988f009c73dc0e237b5a03e7bed913143ab3d",
    "docs/json_npm-ls-G.json": "cbbdd34ef1ad942af68f86c1b159b5e1852b8d060f77370e7ac3cbaaa09b2ee8",
    "docs/logs_npm-install-karma-H.txt": "31baf61628c60829342614d4e5faa0b1867c033691f191f72ca94688508cdea9",
    "docs/page_alembic-cookbook-H.txt": "fec94fdb277078d059f855a42977a44a289b46b8bc5ff6037989cb9609740a60",
    "docs/table_certifi-cas-G.tsv": "7233a24aaaf44dab7c61a5b0ddff530d8c5ad9cfa92c854354d1caf0524edd3e",
    "docs/table_ls-man3-H.txt": "7f1cfc2fc3aecf960918ce13c4c4d5fff65fc46384409258c8ebce20ed0c1d61",
    "docs/tests_dateutil-pytest-G.txt": "0477b76f600bdbfeef493fa9b74a75aa26520c3cba8268185092b4281ae7061e",
}

FROZEN_6 = REPO / "bench" / "retrieval" / "data" / "frozen-6"
SHA256_6 = {
    "WRITER_PROMPT.md": "a985a42d73d8671b9360465abc994ed8fd59b2a08f79307611cd1f552140fee7",
    "qa-I.jsonl": "94a84476f72331974e7f2add340d5e386af1b98c8d70a7c3f79f7e1137bcfc19",
    "qa-J.jsonl": "10a9f6d68cd8b5cc7a91eb6e2a79966b1eb971c86b741c3b7637316264a77d22",
    "docs/code_pydantic-core-error-types-J.rs": "1118c499baac379fdc7e4334f33ca95477f9dcfca2c188aeafd4526076a67fb6",
    "docs/commits_python-tabulate-I.txt": "35e15970e5c91395faca7405347e5c895e33f9efdf54bed379aafab94bdfc4eb",
    "docs/json_pip-inspect-I.json": "3634d12c5d7f31947ed69ada97cfe6033f8d03724662b8e16369cca741be5ebb",
    "docs/logs_postgresql-pkgmeta-session-J.log": "b39fe24845e83edfe2191fd1766eece383e835de54e5d7a60d6f936b12675d41",
    "docs/page_ply-docs-J.txt": "17bef9743fca2d8f5a82562d941769f5f73cdb3a850234cca20a107535f5b864",
    "docs/table_installed-dists-I.csv": "eddb877bd19792579a85001017cf22b33dd999213205cddfa9a9cc29f445e3a6",
    "docs/table_networkx-modules-I.md": "6df5715f261f60e883c8545d9632f00cbf5acc3514bbaa536d22db3142e2261d",
    "docs/table_vim-syntax-ls-J.txt": "d3f9fe1a6bc291911729bf1437b9f4b02d0ed8c9f768c749115b5794046f3c1c",
    "docs/tests_attrs-pytest-I.txt": "6d6c4691bd421b2c076f01b4d55d641341594078510e5eea025c2af6bee867b9",
}

FROZEN_7 = REPO / "bench" / "retrieval" / "data" / "frozen-7"
SHA256_7 = {
    "WRITER_PROMPT.md": "95d3fb1d9c52329893dbc8258836597ff10c0a4c265f9e9c9b41494ed2deffc5",
    "qa-K.jsonl": "ede8efeca99e9adafc4aecd67d39ccb700c47f036d1e162c79ec327db8025bf3",
    "qa-L.jsonl": "523ca47b8446199c0dc17024804e8fc9d80b181d082a19c16bcce67431b202bd",
    "docs/code_libcst-tokenizer-core-L.rs": "7b7949dd8dd5ad437c1d69e7afaf08a46fd6dca7917a242118f1d4899be3238d",
    "docs/commits_six-K.txt": "8094075b249c3db935f5a2844d532879bedd5e9fe306674d356feedcf0a4667b",
    "docs/json_celery-venv-inspect-K.json": "306e326428cb715a568f0a99ad80cc1532f120ba7d91cded94cdd17fe9b8a894",
    "docs/logs_postgresql-tzdb-session-L.log": "2c846d9a1ae85a4511f998b262944c838d4d287ad82baacd38d40ba82731472b",
    "docs/page_pmw-changes-L.txt": "17a0181ea6c49ea3c39c62448270bc43975a2a3619b782720215bd6148f7ed13",
    "docs/table_fertility-K.csv": "2219a1b039b2da46cb8b7fd0e1692de51851e02bfee4a996d64c75c466228e28",
    "docs/table_ls-usr-include-linux-L.txt": "bf089b71a048d9002943e1d714e917def33d513d4a9d3fe0bd392acdfcf08f90",
    "docs/table_sympy-modules-K.md": "2ac8771766551c1c6eaa6c15fe6ec83e1feba3bc951d766e74d801c5b0ca5a2d",
    "docs/tests_boltons-pytest-K.txt": "01167229b874d27b31de7bddebff32910dcc0343358a5025a7b4472706c36782",
}

FROZEN_8 = REPO / "bench" / "retrieval" / "data" / "frozen-8"
SHA256_8 = {
    "WRITER_PROMPT.md": "e785b496770f209ee4f2bf112538cdc1f3391904df335c4c2b0ca1c87a21abae",
    "qa-M.jsonl": "abdea3bbf741ef961ea152f2b0c1b14a6a9a3857f8c1e40303eb563028bbbee0",
    "qa-N.jsonl": "be0fb29b16af4fc6cdc639751d814549e357a5f9edb2e9fad25c9aa445bf53ae",
    "docs/code_cryptography-ocsp-resp-N.rs": "2c61391ea051992b43bbcf1eb3173a6832c22933e7680eea0de12b9233e58e3a",
    "docs/commits_markupsafe-M.txt": "d972052b8b3e196caf546dbebd78f5b83141caaf60c1a0e1ec9dba34aa9bb6e7",
    "docs/json_pip-inspect-flask-venv-M.json": "39035bafae4dc1f0d405fe7b61bb821e5aa74093d85deb928caefb111ecd817e",
    "docs/logs_postgresql-pgbench-N.log": "8b1ea29e2f36b400afef16ad29edf953b63793fe7becec2e7df882fbba5b1cab",
    "docs/page_pygame-surface-N.txt": "642e979681f10024044d000e598bf518c412ef595d8b191287697d30beb3746f",
    "docs/table_ls-cpython-test-N.txt": "230b41214f11e283bbec486618fc73acb2346c15a2314f59c1d3f652836fe273",
    "docs/table_statsmodels-modules-M.md": "36e9fbf03a3ab3bf558ee1c7204e4bf557e66fee44e240468ef11c7dca9ca0f8",
    "docs/table_titanic-passengers-M.csv": "05b0f524a4c9737bb963e828364628d8f9e8da1945033bc635e4287890327048",
    "docs/tests_click-pytest-M.txt": "96b3a02938276db94f1bfa16148f288b2df95b797881898145ea53e52a6051f0",
}

FROZEN_9 = REPO / "bench" / "retrieval" / "data" / "frozen-9"
SHA256_9 = {
    "WRITER_PROMPT.md": "457fe1f23f43167b5fc87b16a1fec2a2498f35f9a7a200eef0a6e94d9a711fb8",
    "qa-O.jsonl": "8f443672bb939221cae48f58864cff532fae64207eabe759ee33523d5c473e02",
    "qa-P.jsonl": "2f13fb2fe00835a433031174085626dc0bf3d8d265a3aec5d1b5e87ad81b4879",
    "docs/code_maturin-auditwheel-linux-P.rs": "6ac258ebc6a8d162ef61849a2f82536a3cbe9c720399708e18c3cf553c5dc9e8",
    "docs/commits_blinker-O.txt": "005f5de9286082d2f937bc93a5118df429cbe7265cf268684f5ba335eec84cc1",
    "docs/json_pip-inspect-requests-venv-O.json": "5b4bd6ea82d16c8a3f586567fdc8a8d5846fd88deeb4a8d846259302d50a2acd",
    "docs/logs_postgres-webcatalog-session-P.log": "e3c6454674c55f631c6b415ccd434d9d92b4c56b0e11306141ebb140ac629539",
    "docs/page_dogpile-cache-usage-guide-P.txt": "9d78b14477c71d26ac69b6981e3980a65c60d53ac5d6d874fed16cfdb04681b7",
    "docs/table_co2-emissions-O.csv": "abf0771f920a651f4d31254a2d2336bec78a15aa21936cc058ae91d2d5154c13",
    "docs/table_lodash-4.18.1-ls-l-P.txt": "2870f25f95fb603d06a391977734266aacc6639b2d15ac03913a960a79614e65",
    "docs/table_pygments-lexers-O.md": "82ef14500d1219de5ba41d6d456310b4c8fa6a4ba503930a899d4f0db26ef6c5",
    "docs/tests_pyparsing-O.txt": "6e3f22c2de4f3c75383fa2c37f03818123600bdcbb4feaf89f6b2fb97a8849a3",
}

FROZEN_10 = REPO / "bench" / "retrieval" / "data" / "frozen-10"
SHA256_10 = {
    "WRITER_PROMPT.md": "2f0783c606905609091d33eb6c5577435429c0dfffcd6725437573a81421ee4e",
    "qa-Q.jsonl": "6c83d37961b530a7bf1ba03715a81267bd15ee742483384f0bae2dd501b3a915",
    "qa-R.jsonl": "3b18250e9260d7b84da3d53a6c3f2511168c127096ce9d5148b98e1546809fe7",
    "docs/code_rpds-py-lib-R.rs": "06fce96d5736b5f5e42dbe5c904843676d8e080ab54105997855ea68516c409d",
    "docs/commits_h11-history-Q.txt": "6e3ffb960b85f3307acf04f2b064f03b66f689b4d0859ac9d7905e37af223d0a",
    "docs/json_pip-inspect-fastapi-uvicorn-Q.json": "39cd65b6f646f426735e12cd017c710d5a596f1f5b9d819a540a092b40a95098",
    "docs/logs_pip-install-jsonschema-format-R.log": "545d9d7e9d30087ea95928871225d688c31a8bd3c03689ae7f13352c889f7fbd",
    "docs/page_lxml-faq-R.txt": "0e2a9c108d569c45e9e482ab8017a835fe6f5bb63cb01e655b16f75786283336",
    "docs/table_cprofile-jsonschema-validate-R.txt": "f2dad20de2c5572b36db6ffceb4f3f5aaff9d6c0d6ef27d158084fe1f2d608ac",
    "docs/table_rdatasets-index-Q.csv": "db70eb54d8607bb11381e4a205885e86fc2d84f1612968e164a74819c475024f",
    "docs/table_scipy-modules-Q.md": "dec996ebbcca8a667094866e60c15f69ce829c3f60da6366565a02eebaacf806",
    "docs/tests_pyasn1-pytest-Q.txt": "725ccb219f09287c3468660e2e754c45b5c6d235572aa2d75be2e3ba0fc3bb53",
}

FROZEN_11 = REPO / "bench" / "retrieval" / "data" / "frozen-11"
SHA256_11 = {
    "WRITER_PROMPT.md": "4bad5b1f40ae838be3f16a7c22d07b073aef249f2c04453373b3a21ad553d0ca",
    "qa-S.jsonl": "c10e6bee5c19b11716eceaab95a3bde6b29532fa8be5bbe2859349734a6cd78f",
    "qa-T.jsonl": "fe7fdd3cc6bdb1683a6d2392c8eb9077c7452bb37fbec1d9b939a01081345d92",
    "docs/code_temporal-envconfig-T.rs": "b72dc525d4a2913515a9df4c40fe0a823b1b22635ad647046d9ee987e53d09e5",
    "docs/commits_chalk-S.txt": "39dec625b2c702c60fee03410cf98c9ff9ed615ee55af05f89dfffebcb006bfe",
    "docs/json_koa-npm-ls-S.json": "1683d60385aaaad79c911f2dad1a77612d271b81b35382647ddc84fce7c71c85",
    "docs/logs_npm-install-nestjs-cli-T.log": "7360bc58419433bf91a86c769d9b568faa877f5ab286334e2a688e257f44f96b",
    "docs/page_npm-config-T.txt": "b73a54f961e7b611ca4e6951f4e79c23af0d674f8b90139f03c603d1dd8577c3",
    "docs/table_dpkg-info-ls-T.txt": "488d8f2fa5e170ef2cfffa09da5a4134dfa5d796d0b84202ea1973fddf9a1c1f",
    "docs/table_eleventy-packages-S.csv": "5b6d511f1ba33b24d77e2e890d13e3e411d2804bbdbbdeb7ced7ab975004422d",
    "docs/table_spdx-licenses-S.md": "766e85afbd43e948d8b35f32e52e20caf968fca608829057db82255ddee1ef0e",
    "docs/tests_koa-node-test-S.txt": "330ea3b8c9cabdfb27e3bff2880eda29208f8c01dbc43061ceeaa24041efd7fb",
}

FROZEN_12 = REPO / "bench" / "retrieval" / "data" / "frozen-12"
SHA256_12 = {
    "WRITER_PROMPT.md": "78ee549f31f2387eca9ed10873fea13e80be5df623d7a98ca24949c1e0f84009",
    "qa-U.jsonl": "e9d582a47645fe0c080664a85b0221bf23d169ef167d8c1e782b3ba4db8a6738",
    "qa-V.jsonl": "16dfc9469f0c4e4c76b95d284a3a05ee430ab6d81f9eb52d4506e3523c867f1c",
    "docs/logs_apt-install-sim-gimp-inkscape-postgresql-V.txt": (
        "a2eebc96de38c5e3a0566cfe92074d6893aa52417f0431b4c62498c42380bc0b"
    ),
    "docs/logs_npm-install-gulp-debug-V.log": "ddf40506e56a59e2ae9d8b061e1bf54961742d29008ee50fad9c5f857a5acef1",
    "docs/logs_pip-download-jupyter-V.txt": "119b8cef69cee0d9d6e7c0e116f31f1e2beaa555336577d76af948494bc8e49a",
    "docs/logs_python-importtime-sympy-V.txt": "f54183fdb27ec8079a4e063d76b459ccff519f7242bf83cec7a708d01fcb3d03",
    "docs/table_cprofile-pygmentize-html-U.txt": "6a42567d36a69c3508a18ea2614358a48cd68960e131a10d203835a339d5bab4",
    "docs/table_proc-slabinfo-U.txt": "ad30be49229e04cf6fce9cd063b4a7f8c2c4d1ae9cfa2922295d3528dc45e1c0",
    "docs/table_top-batch-three-iterations-U.txt": "0f4fedb156f6f424ecd33aaceacd9b0a94992d599cb8086bcf90db993299a1f9",
    "docs/table_vmstat-wide-timestamped-180s-U.txt": "ed5d07ec4e7d56ba22e7ae00c535f36d086a7d32fe8f6ed399bf7db6c29bc3aa",
}

FROZEN_13 = REPO / "bench" / "retrieval" / "data" / "frozen-13"
SHA256_13 = {
    "WRITER_PROMPT.md": "c58a6012dfec2ebf39b6dab49dd541da2aa7857d9efcfb265cc67ac821dc71b0",
    "qa-W.jsonl": "fe3cf20db45b75a7d10325a299f127a15debea317a93e6a86775d1215996497b",
    "qa-X.jsonl": "adce898ef5e187ca17e3d03f4fa3a78bb31f34e96be120ed1d20f057e54f3d66",
    "docs/code_pyo3-build-config-impl-X.rs": "c424e679c6e357f49f0cdad8d655c86828e9ebe9cac613719cdf3ec869ba1bdc",
    "docs/commits_pluggy-W.txt": "d88bc287b4185002ed40279d8414ccf8ad59f7e7f7d2f0e3950cf980935189db",
    "docs/json_pip-inspect-django-paramiko-W.json": "94835a8b3e613967fcb428951a8269c8fc4e96e12644e8dee0091d8d9a1b15a1",
    "docs/logs_postgresql-glyphs-session-X.log": "93b9fa9b3de448904fbcdfeb8caaa5717307a638f305d27b490bfd2f5086f0f8",
    "docs/page_simpleparse-mxtexttools-X.txt": "1093480db2c37e57e19c2f08350387d55a4314006a04b66cbb72b6dc2dc8b43a",
    "docs/table_ls-l-usr-share-man-man7-X.txt": "48b9007a20d1c2fcf72e70c3f27b78433aea4b8b57fa795db25a580ce495606d",
    "docs/table_palmerpenguins-raw-W.csv": "144f623143c9360fd77322a4f86acb06dc198814dbd2669724c63e6457b907bd",
    "docs/table_stdlib-modules-W.md": "89fc65561057e6789cff3ecf034894fe6931686230b5195dce77dfb908aa799e",
    "docs/tests_pyflakes-pytest-W.txt": "4e7cb6a05c62ffdc3c4f389e857f9b49d25022cca6ac16354c79eaaa8134f7b2",
}

FROZEN_14 = REPO / "bench" / "retrieval" / "data" / "frozen-14"
SHA256_14 = {
    "WRITER_PROMPT.md": "3f0b95b4a1a62c79f78b58f1d6790e07ca71c92a51b34c6dbe7983086d9b250e",
    "qa-Y.jsonl": "ae3f36228d92d05cf0dea9b8e10b0203bf6b562266dcceb84573087aaa70e4bc",
    "qa-Z.jsonl": "3620e4e9b846a8675fa916c5f9b032e9daa2ef83eb9f5ef64f9f5a9673d248ce",
    "docs/code_temporal-resource-based-tuner-Z.rs": "f319afc56eaf27afc801f29987cc69e8eea030f03f0b8a860cd159fbedabb2ac",
    "docs/commits_debug-Y.txt": "e922eea821b43e5ac9a9f89e510ce553575aaa53f49635ff23be370e6fdcb823",
    "docs/json_node-red-npm-ls-Y.json": "c9ecd1ee4ef04ed3f522fe2542068c851fc12af55c159b2349262dd3fcf70e98",
    "docs/logs_postgres-iso-codes-session-Z.log": "4e7735bfcb364d13a1b55fdea8b76719170a22970122539941f8f93015f188f2",
    "docs/page_npm-package-json-Z.txt": "b001802fd56e88232e2456278f512ca92dce08ab835d2325485aa57db0e7c5fb",
    "docs/table_angular-cli-packages-Y.csv": "6725cfbd97ff9815b62473e83f76e2fdaf7b6160d68eb1f7e84fd2a485839246",
    "docs/table_apt-list-installed-Z.txt": "f496c4058a2c54d4f67b3dde0899f9412e2d5d119ea6188165257ae161ef9295",
    "docs/table_date-fns-functions-Y.md": "e84eeca8e2157c4854240239c75eca79f7a2eb57f1031aec7d397c4b3785f23d",
    "docs/tests_picomatch-mocha-Y.txt": "3ae8c3f3ed85dfe51d007a0273e626e7f003028a71ef861142f91506ed6a15ca",
}


#: Each set: its folder, its files' digests, its writers' letters, and how many questions they wrote.
FROZEN_15 = REPO / "bench" / "retrieval" / "data" / "frozen-15"
SHA256_15 = {
    "WRITER_PROMPT.md": "671c3b73850d0dc170b3f7ccc2cd9d5b30a207786915a4d707986b6c47931c26",
    "qa-g.jsonl": "9c3f43594731b2081902c8269e5f7ad26e8697a4320b2ba019c209099191e04d",
    "qa-h.jsonl": "d4071185c8f84195203d2b1f8a2c06302d5b0f9fad40401cadf3e2cd232afff5",
    "docs/code_tokenizers-tokenizer-h.rs": "611b26383323a3c9871efec7616d949425e3927cefd2a867f3df1d4fe016284f",
    "docs/commits_tomli-g.txt": "7290473783efa1940d549e4a180c822b5082e0d71d3015ff2cef2625db9059b0",
    "docs/json_pip-inspect-aiohttp-g.json": "f6ed38e5e671779e8d5d433307fc9fb44646ad11dc8b32e4b87916b840a06774",
    "docs/logs_pip-install-trio-h.log": "d383f37917c1be47f40c35c89496cf71075ac05f96e83737db2aa9b59646a6fb",
    "docs/page_mock-examples-h.txt": "4baef5ae2c1e10cccce9d63a3388148218b3123704074153eef9e146dd29b8d0",
    "docs/table_cannes-films-g.csv": "a22718e7b0719655bddb7447025f3055a23cd028724177b5e1e9271dd06d34a9",
    "docs/table_ls-babel-locale-data-h.txt": "c2d8dc4d22ced8fbcc4a371d9987333f0e376f491123fb912062d71ce3ec648c",
    "docs/table_numpy-modules-g.md": "396832c0e86e68f1045ecaf874cc4b448b750a0b92e977d8aea9eb4846d3c7f4",
    "docs/tests_sqlparse-pytest-g.txt": "14fb43a0e2c7714391cafe2c050eb9430aefe49f7a5a21993fb0429a14923d3c",
}

FROZEN_16 = REPO / "bench" / "retrieval" / "data" / "frozen-16"
SHA256_16 = {
    "WRITER_PROMPT.md": "8ce82405e493f44b3d68967e0e4214b606806d9092e7fa6f731543c0b12c3039",
    "qa-k.jsonl": "1314b897086e49f50f1f6e58208e1fb50c1ff3253bef2156c01ae4cf719533e5",
    "qa-m.jsonl": "75b1f8751c6a769be86aa7feab2d4481bd55f8f97ac0b59b0edc37fb2e429883",
    "docs/code_temporal-core-bridge-client-schedules-m.rs": (
        "0e0f38336dd6bd0c1ff26752f384303828b40eac79047dbc2baffb9d0000c0c4"
    ),
    "docs/commits_body-parser-k.txt": "59ae88f772b82d3ca7ce9ec12bd9535a12426fa7d4272ebde9cf8739c579ac27",
    "docs/json_npm-ls-browserify-k.json": "36d0c791bd61ded839fad15e427912c960d36ae0e494196698931cfa11d28f1b",
    "docs/logs_npm-install-lerna-verbose-m.log": "d049e578d4ba0fa2950dd54dec8246a595edc31130f1bb4d5b98eb4112638c4d",
    "docs/page_underscore-1.13.4-docs-m.txt": "e51f92b9ae2983b377bfcce57d3ec1317d45abbeaa8d8b57aa7feb98d33f8686",
    "docs/table_ls-l-usr-share-man-man8-m.txt": "195885c16802a84ef682e6245857e7a5672efcc3a2061583e44fe4247cef451d",
    "docs/table_npm-babel-packages-k.csv": "ccee23e4533d3c037635ec270acebd83072be7c8794fbbf8b7f59fea0ca4bc91",
    "docs/table_ramda-functions-k.md": "b086a04455dff76ee09d47e3bbed03564caaf16fc0b18cdf39812cd8d056ac13",
    "docs/tests_qs-tape-k.txt": "81538cfafbc30ec18fc2b32d376ac84cd459da482ddbb4a93135509476580973",
}

FROZEN_17 = REPO / "bench" / "retrieval" / "data" / "frozen-17"
SHA256_17 = {
    "WRITER_PROMPT.md": "8c1c71c7629e353db2f89ab7e9ee7c7880e40b9c18153644ab8abed6cd7db612",
    "qa-c.jsonl": "0147ac5fef9c48a71988832ce35c0f3a23c67031dcba5c69c8a00aa7963318ae",
    "qa-d.jsonl": "531d391f502c231e5f0bca2e8974627987f122266fd8a9ce70ba30d8df70d73f",
    "docs/commits_bitflags-c.txt": "20a23fe931bc33c199448b4cffc965b86b2a5892e22c6a84e52d9579a29edaef",
    "docs/commits_cJSON-d.txt": "e734362c2e9045f923cb1d70f291608a064f659d26d1d8f479e6c3a0706522dc",
    "docs/commits_node-semver-d.txt": "c5ba9743b227710c03a0797f466448ea550c17d7a19c009723327635607a5593",
    "docs/commits_path-to-regexp-d.txt": "a903b9819f107d48bb3a984fa20e790d43964ec02662906f676363eec16b9e5f",
    "docs/commits_python-dotenv-c.txt": "cb10a8af19859b2f0ef92fb0227c1d16df0aa3ef4d29a26c678629c5362eb76a",
    "docs/commits_tenacity-c.txt": "5cdf4f82d031486e21d9d25e575164b262fb161c1d7c3995a443ac69ec5b2732",
}

FROZEN_18 = REPO / "bench" / "retrieval" / "data" / "frozen-18"
SHA256_18 = {
    "WRITER_PROMPT.md": "3124a576f48d073453d4f9b0301df97f3ce1d2e827f04c4c696c28c1e28bfc4a",
    "qa-e.jsonl": "7abacf2f6b42243f373b7a72b516121d5bca354d9fcbe288ed4e10416442e440",
    "qa-i.jsonl": "60bcf0e1161c2b47075d4892e7d850d8a27f9edccd047f1d2b5e6433b0ffb69e",
    "docs/commits_bats-core-i.txt": "6de2e065eb024356e0a9f7ba4fffeb678a1c9773539b28408c9c03c90f4b0654",
    "docs/commits_commander-i.txt": "ce398c9e4049c53ec63d0b0cbe7a00907922a4a353046d7f67a6f858dc310698",
    "docs/commits_log-e.txt": "823b700f9ecacf4fc689d2b20f6fac8660024a97e3b83e91c9804ba048240f21",
    "docs/commits_more-itertools-e.txt": "3ec5a231233c0dfc8a6af22cbacb45e59642f249900b2080f1add78fe9aa8b97",
    "docs/commits_structlog-e.txt": "c2a1129b00ebb1bcab69603df9ef6e03231ccf48e25f3d9b64fb87b1b905bab9",
    "docs/commits_uuid-i.txt": "c0f828291a755868203dcb374377062144f487d4e10e1dfe0edcdad452a52a8f",
}

SETS = [
    pytest.param(FROZEN, SHA256, "ab", 111, id="frozen"),
    pytest.param(FROZEN_2, SHA256_2, "ab", 98, id="frozen-2"),
    pytest.param(FROZEN_3, SHA256_3, "CD", 84, id="frozen-3"),
    pytest.param(FROZEN_4, SHA256_4, "EF", 96, id="frozen-4"),
    pytest.param(FROZEN_5, SHA256_5, "GH", 95, id="frozen-5"),
    pytest.param(FROZEN_6, SHA256_6, "IJ", 107, id="frozen-6"),
    pytest.param(FROZEN_7, SHA256_7, "KL", 108, id="frozen-7"),
    pytest.param(FROZEN_8, SHA256_8, "MN", 107, id="frozen-8"),
    pytest.param(FROZEN_9, SHA256_9, "OP", 107, id="frozen-9"),
    pytest.param(FROZEN_10, SHA256_10, "QR", 106, id="frozen-10"),
    pytest.param(FROZEN_11, SHA256_11, "ST", 108, id="frozen-11"),
    pytest.param(FROZEN_12, SHA256_12, "UV", 94, id="frozen-12"),
    pytest.param(FROZEN_13, SHA256_13, "WX", 106, id="frozen-13"),
    pytest.param(FROZEN_14, SHA256_14, "YZ", 107, id="frozen-14"),
    pytest.param(FROZEN_15, SHA256_15, "gh", 107, id="frozen-15"),
    pytest.param(FROZEN_16, SHA256_16, "km", 106, id="frozen-16"),
    pytest.param(FROZEN_17, SHA256_17, "cd", 66, id="frozen-17"),
    pytest.param(FROZEN_18, SHA256_18, "ei", 66, id="frozen-18"),
]


@pytest.mark.parametrize(("root", "digests", "writers", "count"), SETS)
def test_the_frozen_questions_and_their_documents_are_unchanged(
    root: Path, digests: dict[str, str], writers: str, count: int
) -> None:
    changed = [
        name for name, digest in digests.items() if hashlib.sha256((root / name).read_bytes()).hexdigest() != digest
    ]
    assert changed == [], "the frozen eval was edited; it must stay as written (add new questions elsewhere)"
    assert sorted(p.name for p in (root / "docs").iterdir()) == sorted(n.split("/")[1] for n in digests if "/" in n)


@pytest.mark.parametrize(("root", "digests", "writers", "count"), SETS)
def test_every_frozen_answer_is_in_its_document_once(
    root: Path, digests: dict[str, str], writers: str, count: int
) -> None:
    questions = [
        json.loads(line)
        for letter in writers
        for line in (root / f"qa-{letter}.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert len(questions) == count
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        assert Path(q["doc"]).name.startswith(q["kind"] + "_"), q["id"]
        if q["type"] == "aggregate":  # a value computed over the rows, said with how it was computed
            assert q["answer"], q["id"]
            assert q["how"], q["id"]
            continue
        document: bytes = (root / q["doc"]).read_bytes()
        assert document.count(q["answer"].encode("utf-8")) == 1, q["id"]
